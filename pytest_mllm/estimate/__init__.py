"""A benchmark's full score estimated from a subset (`--mllm-estimate`): stratified by difficulty, with an
interval that holds whatever model is under test.

One concern per module: `panel` reads earlier runs' per-sample records (or a curation manifest) into each
unit's difficulty, `design` parses the size asked for and draws the subset (strata of tasks × difficulty
bands, a seeded draw in each), `estimator` turns a drawn subset's records into estimates of every
count metric with a jackknife interval, `plan` picks a run's samples and marks their records, `comparison`
pairs a subset run with a full baseline for regression limits, `section` shows the estimates in every
output, `options` declares and reads the command-line options, `check` is the calibration report
(`pytest-mllm-estimate-check`).

Nothing here is imported on the plugin's import path but `options` (standard library only); numpy and
scipy (the `stats` extra) are imported where an estimate is computed.
"""

"""Speed of pytest-mllm: its overhead against plain pytest, and its throughput against raw loops.

The package behind `python scripts/perf.py`: `timing` (the shared helpers: timed runs, medians,
ABBA repetitions, threads, the machine), one module per suite (`core`, `hotpath`, `throughput`,
`peers`), `table` (the core/hotpath/throughput table and --json document) and `cli` (the
command line and the workers' modes).

    python scripts/perf.py [--suite {core,hotpath,throughput,all}] [--samples 10000] [--repeat 3] [--json out.json]
    python scripts/perf.py --suite peers [--repeat 3] [--peer-images 56] [--json out.json]

Every figure is measured in this one invocation, over --repeat repetitions, each run in a fresh
subprocess (except the raw generate loop, see a.); the runs of one figure alternate (ABBA
order: A B C, then C B A, ...) so that drift in the machine's speed hits them alike. Figures
are medians (and mins) of wall time, with the CPU time (user + system) of the process tree
beside them: on a shared machine CPU time varies less than wall time. The machine, the
versions and the 1-minute load average before and after each suite are printed and written.

Suite "core" (the original figures) builds a synthetic yes/no benchmark in a temporary folder
(--samples JSONL samples in ten tasks, in pairs scored by accuracy+, every image path pointing
at one small real PNG; recorded answers for `--mllm=replay:`, a fifth of them wrong) and times:

  c.  collecting it (`--collect-only -q`); goal: under 3 s;
  c2. running it (`-q -p no:cacheprovider`) against plain pytest running as many trivial
      parametrized tests with the same flags; goal: plugin/plain at most 1.5x;
  c3. the same two runs with `-n 2` (pytest-xdist); same goal.

Suite "hotpath" times figures a, b and f below; suite "throughput" all of a to f:

  a.  plugin throughput against a raw batched `generate` loop: the tiny LLaVA on the bundled
      `shapes` benchmark (360 samples), batch size 8, no cache, no xdist, one torch thread in
      both (see the threads below). Method (differencing):
        plugin s/sample = (wall of the 360-sample run - wall of the same command with `-k`
                           selecting 1 sample) / 359,
      both `pytest --mllm=tiny-llava --mllm-bench=shapes --mllm-batch-size=8 --mllm-cache=off
      -p no:cacheprovider -q --mllm-json=...`: the two runs share process start, imports,
      collection of all 360 samples, the model load and the first `generate` call's warm-up,
      so the difference is what the other 359 samples cost end to end (images, prompts,
      generation, scoring, reports, results). The raw loop is a persistent subprocess that
      loaded the model once (`HFModel`, one thread) and ran one untimed 1-sample batch
      (the same warm-up the subtraction removes from the plugin); each repetition times its
      loop over the 360 samples in the plugin's order and batches: `load_image`, prompt
      template, chat template, processor, `model.generate(do_sample=False, max_new_tokens=8)`,
      decode. raw s/sample = loop time / 360. Figure: plugin throughput / raw throughput =
      raw s/sample / plugin s/sample. The goal (>= 0.95) is judged on the in-process figure,
      which the start-up's noise (a second or more between runs) does not reach: a plugin
      loaded into the 360-sample run with `-p` times, inside the process, from the end of the
      first batch's 8 tests to the end of the last test (every later batch's images, prompts,
      generation, scoring and test reports), per sample after the first batch (the session
      finish, scores, results JSON and terminal summary, is shown beside it: a cost per run,
      which the differencing figure includes as far as it grows with the samples); the raw
      loop's figure is its loop minus its first batch, per sample after it. Also shown: generation alone, sum of
      per-record `latency_s` of the plugin run (what HFModel.generate measures: chat template,
      processor, generate, decode) against the raw loop's time for the same steps, and
      whether the plugin's answers equal the raw loop's. And plain pytest doing the same work: plain
      pytest (`-p no:mllm`) on a generated module of 360 parametrized tests, each taking its
      sample's answer from the raw loop's batches (a batch's first test answers all 8), timed
      in-process the same way: plain pytest/raw is what pytest as shipped leaves of the raw
      loop's throughput once each sample is a test; plugin/plain pytest compares pytest-mllm
      with that (above 1: faster than plain pytest doing the same work).
  a2. (suite "throughput") the in-process figure of a on the bigger random LLaVA of d (all 360
      samples, its own raw loop): a model whose batch takes 0.2 s rather than 25 ms, where the
      per-test cost weighs as it would on a real model (information, no goal).
  b.  a fully cached re-run of the --samples benchmark against the plain run of c2 (goal <=
      1.2x): a conftest in a subfolder registers "perf-model", a model with an `identity`
      (so the plugin caches its answers) that answers instantly; one untimed run fills the
      response cache, then each timed run (`--mllm-cache=on`, the default) must leave the model
      unasked (it touches a marker file when asked). b2: the same run writing `--mllm-json`
      (every record must say `cached: true`), whose intervals bootstrap every metric over the
      10,000 records (no goal: it shows what the results file costs).
  d.  `-n 2` against `-n 1` (workers use 1 torch thread each) on a bigger random LLaVA built
      once into the temporary folder (4-layer text model of hidden size 512, 64x64 vision
      tower): `pytest --mllm=hf:<folder> --mllm-bench=shapes -k "existence or count"
      --mllm-cache=off --mllm-batch-size=8`; figure: wall n2/n1 (expect < 1 on 2 cores).
  e.  the OpenAI adapter at `--mllm-concurrency=8` against 1, `-k existence` (80 samples),
      batch size 8: against `transformers serve` of the tiny LLaVA on loopback (which answers
      one request at a time), and against a SIMULATED server in this script (stdlib,
      threaded, answers "Yes" to any chat completion after sleeping 50 ms, so it overlaps
      requests); figures: wall c8/c1, and in-test time c8/c1 (the sum of per-record
      `duration_s`: the tests' call phases, without process start and reporting).
  f.  fixed cost: the wall time of `pytest --mllm=tiny-llava --mllm-bench=shapes --mllm-cache=off
      -k <8 samples>` against its floor, a fresh interpreter that only imports torch and
      transformers and loads the tiny LLaVA (`AutoProcessor` and
      `AutoModelForImageTextToText.from_pretrained`, this script's `_floor` mode); figure:
      plugin/floor (no goal: what is left above 1 is pytest, collection, the plugin and 8
      answers).

Threads: every timed process runs with OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 (torch's
intra-op threads follow them), and the script's own workers (the raw loop, the floor, the
bigger LLaVA's build) also call torch.set_num_threads(1), so that runs are comparable: with
torch's default threads (one per core) a run contends with whatever else the machine runs.

The subprocesses write Python and assertion-rewrite bytecode caches (into the temporary folder,
even where PYTHONDONTWRITEBYTECODE is set, as on a developer's machine), filled by unrecorded
warm-up runs first. Set-up is untimed and runs several things at once: first the warm-up runs
and the cache fill (they compile torch's and transformers' bytecode), then the raw loop's model
load, the bigger LLaVA's build and the start of `transformers serve`, which then idles until e.
Every run's final summary line is checked: a wrong number of results, or any error, is an error
of this script (exit status 2). The output ends with the time each phase took; with the
defaults that is about 7-8 minutes on a quiet 2-core machine (--repeat 2: about 5).

Suite "peers" (not part of "all") runs pytest-mllm, lmms-eval and VLMEvalKit, each from its own
virtual environment (--lmms-eval-python, --vlmeval-python, --vlmeval-src or $PERF_LMMS_EVAL_PYTHON,
$PERF_VLMEVAL_PYTHON, $PERF_VLMEVAL_SRC; setup in docs/peers.md; skipped, exit status 0, when
neither is found), on one tiny-LLaVA folder (save_pretrained output, loaded by all three as
LlavaForConditionalGeneration) and one data set written three ways (--peer-images PNGs, two
yes/no questions each: an MME release folder for `--mllm-bench=mme`, an lmms-lab/MME-style
parquet file for an lmms-eval task in an --include_path folder, a VLMEvalKit MME-style TSV in
$LMUData): greedy, 16 new tokens, each tool's default batching, OMP/MKL threads 1. Each timed
run is a whole process. Cold: nothing reused; cached: pytest-mllm's response cache, lmms-eval's
--use_cache and datasets cache, VLMEvalKit's --reuse of its prediction file and decoded images,
filled by an untimed run of each tool. Figures: medians and mins of each, pytest-mllm/peer
(goals <= 0.4 cold, <= 0.1 cached), and the answers compared sample by sample.
"""

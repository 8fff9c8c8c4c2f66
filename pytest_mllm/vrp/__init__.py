"""Visual referring prompting (VRPTEST, Li et al.) as metamorphic tests.

A source sample (image, question, target region) is varied by drawing a pointer around
the target and, at the "full" level, the question itself onto the image:

* `variants` — the `Variant` model, the default and full grids, a hypothesis strategy;
* `fonts` — the font fallback chain for rendered text;
* `render` — drawing one variant onto an image with Pillow;
* `expand` — turning any sample with a target region into its variant samples.

The bundled offline benchmark "vrp_shapes" is a loader (`pytest_mllm.loaders.vrp_shapes`); the
paper's relaxed accuracy for code answers (BLEU-4 above 0.8) is a scoring rule
(`pytest_mllm.scoring.code_match`).

Submodules are imported on demand, so importing this package costs nothing.
"""

"""Visual referring prompting (VRPTEST, Li et al.) as metamorphic tests.

A source sample (image, question, target region) is varied by drawing a pointer around
the target and, at the "full" level, the question itself onto the image:

* `variants` — the `Variant` model, the default and full grids, a hypothesis strategy;
* `fonts` — the font fallback chain for rendered text;
* `render` — drawing one variant onto an image with Pillow;
* `expand` — turning any sample with a target region into its variant samples;
* `scenes` — the bundled offline benchmark "vrp_shapes";
* `code_match` — the paper's relaxed accuracy for code answers (BLEU-4 above 0.8).

Submodules are imported on demand, so importing this package costs nothing.
"""

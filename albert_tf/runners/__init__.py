"""What the three runners (run_pretraining, run_classifier, run_squad) share: their flags,
generated from dataclasses (`trainer_flags`, `finetuning_flags`, `pretraining_flags`,
`classifier_flags`, `squad_flags`, `export_flags`, `recipe_flags`), the up-front checks
(`checks`), their inputs and predictions (`pretraining_inputs`, `squad_inputs`,
`predictions`) and the one run setup (`run_setup`: strategy, batch split, output
directory, run_config.json, one-line error exit). The only package that reads absl FLAGS;
the library below receives values."""

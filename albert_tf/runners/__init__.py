"""The runners: one parser (data_pipeline.command) turns argv into a settings value, and the
one driver (`driver.run(family, settings)`) runs every fine-tuning family (`families/`);
pretraining (`pretraining.run(settings)`) shares the settings groups (the training tier's
`finetuning_settings`, `controls`), the up-front checks and the run setup
(`albert_tf.training.run_setup`). Nothing here reads absl's global flag set: values come
in as arguments."""

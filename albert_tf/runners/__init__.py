"""What the three runners (run_pretraining, run_classifier, run_squad) share: their flags
and how they turn them into frozen configs (`flags`), and the one run setup (`run_setup`:
strategy, batch split, output directory, run_config.json, one-line error exit). The only
package that reads absl FLAGS; the library below receives values."""

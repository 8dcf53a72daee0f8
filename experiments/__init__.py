"""Quality experiments at small scale (what pretraining buys on GLUE, SOP vs NSP, the SQuAD
v2.0 heads): accuracy, not speed. Run from the repository root as `python -m
experiments.<name>`; results and commands are in docs/performance.md."""

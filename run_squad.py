"""Fine-tune ALBERT for SQuAD v1.1 / v2.0 and CMRC 2018 (albert_tf.runners.families.squad).

`python run_squad.py --help` lists its settings; the console script is the same command."""

from albert_tf.runners.commands import squad

if __name__ == "__main__":
    squad()

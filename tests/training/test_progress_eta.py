"""The progress line's ETA (albert_tf.training.run_files.Pace): a segment's first loop also
traces, compiles and fills the input pipeline, so its line gives an upper bound marked as
such, and every later line's ETA is at the pace of the steps after the first loop."""

from albert_tf.training.run_files import Pace, RunFiles

VALUES = {"loss": 0.5, "learning_rate": 1e-3, "examples_per_second": 10.0, "grad_norm": 1.0}


def test_the_eta_counts_the_steps_after_the_first_loop():
    lines = []
    files = RunFiles("unused", log=lines.append)
    pace = Pace(0, 1000.0)
    # 100 steps a loop; the first loop takes 60 s (40 s of start-up), then 20 s a loop
    files.progress(100, 1000, VALUES, pace, now=1060.0)
    files.progress(200, 1000, VALUES, pace, now=1080.0)
    files.progress(300, 1000, VALUES, pace, now=1100.0)
    # first: 900 steps at 100 per 60 s = 540 s, given as an upper bound
    assert lines[0].endswith("| ETA <= 0:09:00 (start-up included)"), lines[0]
    # then: 800 steps at 100 per 20 s = 160 s (the start-up's pace would say 0:10:40)
    assert lines[1].endswith("| ETA 0:02:40"), lines[1]
    assert lines[2].endswith("| ETA 0:02:20"), lines[2]


def test_a_resumed_segment_starts_its_own_pace():
    lines = []
    files = RunFiles("unused", log=lines.append)
    files.progress(500, 1000, VALUES, Pace(400, 0.0), now=50.0)  # resumed at 400
    assert lines[0].endswith("| ETA <= 0:04:10 (start-up included)"), lines[0]

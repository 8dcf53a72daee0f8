"""Each task kind's serving code, one folder a kind: `modules` (its SavedModel and LiteRT
modules, TensorFlow; registered in `albert_tf.serving.registry.SERVING`), `lite_runner` (its
side of the on-device runner, no TensorFlow; registered in
`albert_tf.serving.tflite_predict.RUNNERS`) and its own helpers. The task kinds themselves
(task.json fields, models, hooks) are `albert_tf.checkpoints.task_kinds`."""

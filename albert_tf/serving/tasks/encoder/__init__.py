"""The encoder kind's serving: `modules` (its SavedModel and LiteRT modules) and
`lite_runner` (its side of the on-device runner)."""

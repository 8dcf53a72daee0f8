"""`--recipe`: a fine-tuning recipe (albert_tf.training.recipes) applied to the parsed flags.

A runner calls `apply_recipe` first, before its checks, so the values a recipe sets are
checked, recorded in run_config.json and frozen into the TrainerConfig and AlbertConfig
exactly as typed ones. What the user gave wins (absl's `FLAGS[name].present`): the flag
itself, or the same thing in another form (--num_train_steps or --num_train_epochs instead
of --train_step; --num_warmup_steps or --warmup_proportion instead of --warmup_step). One
line per value goes to stdout: what was set and its source, or what was kept and why.
"""

from __future__ import annotations

from absl import flags

FLAGS = flags.FLAGS

# A recipe value is left alone when the user gave any of these flags instead.
_SAME_AS = {
    "train_step": ("num_train_steps", "num_train_epochs"),
    "warmup_step": ("num_warmup_steps", "warmup_proportion"),
}


def apply_recipe(task: str, built_in: dict[str, str] | None = None) -> list[str]:
    """With --recipe, sets the recipe's values for `task` (the task's name as the user gives
    it) and the model of --albert_config_file / --preset on every flag the user did not
    give; prints and returns one line per value (none without --recipe). `built_in`: name
    → what stands for a value this runner has no flag for (SQuAD's head dropout). Raises
    ValueError (one line) when the recipe has no values for the task."""
    if not FLAGS.recipe:
        return []
    from albert_tf.runners.finetuning_flags import albert_config_from_flags
    from albert_tf.training.recipes import UnknownRecipeTask, model_size, paper_recipe

    config = albert_config_from_flags()
    size = model_size(config)
    try:
        recipe = paper_recipe(task, size)
    except UnknownRecipeTask as e:
        raise ValueError(f"--recipe={FLAGS.recipe}: {e}") from None
    built_in = built_in or {}
    lines = [
        f"recipe {FLAGS.recipe} for {recipe.task}, model size "
        f"{size or 'not a released one (the values are the same for every size)'}:"
    ]
    for s in recipe.settings:
        source = s.describe()
        if s.name == "albert_dropout":
            source += f"; the config's: {config.hidden_dropout_prob:g}"
        given = [n for n in (s.name, *_SAME_AS.get(s.name, ())) if n in FLAGS and FLAGS[n].present]
        if s.name in built_in:
            lines.append(f"  {s.name}={s.value:g}: {built_in[s.name]} ({source})")
        elif s.name not in FLAGS:
            lines.append(f"  {s.name}={s.value}: not applied, this runner has no such flag")
        elif given:
            kept = ", ".join(f"--{n}={FLAGS[n].value}" for n in given)
            lines.append(f"  kept {kept} (given; recipe: --{s.name}={s.value}, {source})")
        else:
            FLAGS[s.name].value = s.value
            lines.append(f"  --{s.name}={s.value} ({source})")
    print("\n".join(lines), flush=True)
    return lines

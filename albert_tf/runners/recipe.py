"""`--recipe`: a fine-tuning recipe (albert_tf.training.recipes) applied to a settings value.

The driver applies it first, before its checks, so the values a recipe sets are checked,
recorded in run_config.json and frozen into the TrainerConfig and AlbertConfig exactly as
typed ones. What the user gave wins (`Settings.given`): the setting itself, or the same
thing in another form (--num_train_steps or --num_train_epochs instead of --train_step;
--num_warmup_steps or --warmup_proportion instead of --warmup_step). One line per value
goes to stdout: what was set and its source, or what was kept and why.
"""

from __future__ import annotations

# A recipe value is left alone when the user gave any of these instead.
_SAME_AS = {
    "train_step": ("num_train_steps", "num_train_epochs"),
    "warmup_step": ("num_warmup_steps", "warmup_proportion"),
}


def apply_recipe(family, s):
    """`s` with --recipe's values for the family's task set on every setting the user did
    not give (unchanged without --recipe); prints one line per value. ValueError (one
    line) when the recipe has no values for the task, or the family has no recipe."""
    if not s.recipe:
        return s
    task = family.recipe_task(s)
    if task is None:
        raise ValueError(family.no_recipe(s))
    from albert_tf.training.finetuning_settings import finetuning_config
    from albert_tf.training.recipes import UnknownRecipeTask, model_size, paper_recipe

    config = finetuning_config(s)
    size = model_size(config)
    try:
        recipe = paper_recipe(task, size)
    except UnknownRecipeTask as e:
        raise ValueError(f"--recipe={s.recipe}: {e}") from None
    built_in = family.recipe_built_in(s)
    lines = [
        f"recipe {s.recipe} for {recipe.task}, model size "
        f"{size or 'not a released one (the values are the same for every size)'}:"
    ]
    changes = {}
    for r in recipe.settings:
        source = r.describe()
        if r.name == "albert_dropout":
            source += f"; the config's: {config.hidden_dropout_prob:g}"
        given = [n for n in (r.name, *_SAME_AS.get(r.name, ())) if s.has(n) and s.given(n)]
        if r.name in built_in:
            lines.append(f"  {r.name}={r.value:g}: {built_in[r.name]} ({source})")
        elif not s.has(r.name):
            lines.append(f"  {r.name}={r.value}: not applied, this runner has no such flag")
        elif given:
            kept = ", ".join(f"--{n}={getattr(s, n)}" for n in given)
            lines.append(f"  kept {kept} (given; recipe: --{r.name}={r.value}, {source})")
        else:
            changes[r.name] = r.value
            lines.append(f"  --{r.name}={r.value} ({source})")
    print("\n".join(lines), flush=True)
    return s.replace(**changes)

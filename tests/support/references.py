"""Reference models for parity tests: Hugging Face ALBERT (PyTorch, CPU) with random
weights, and an official-layout TF1 checkpoint written from the same values.

The official names below are written out from the official checkpoints' variable
names, independently of `albert_tf.checkpoints`, so that a mistake in the library's name
table cannot cancel out in the tests.
"""

import numpy as np

from tests.support.tiny import tiny_fields


def hf_pretraining_model(directory, seed=0, heads=True, **config):
    """Builds a Hugging Face AlbertForPreTraining (or AlbertModel with heads=False) whose
    every parameter (biases, LayerNorms, heads included) is random, saves it with
    `save_pretrained` and returns it in eval mode."""
    name = "AlbertForPreTraining" if heads else "AlbertModel"
    return hf_model(directory, name, seed, **config)


def hf_model(directory, class_name, seed=0, **config):
    """`hf_pretraining_model` for any Hugging Face ALBERT class (task heads too)."""
    import torch
    import transformers

    fields = tiny_fields(
        num_hidden_groups=1,
        inner_group_num=1,
        hidden_act="gelu_new",
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        classifier_dropout_prob=0.0,
        type_vocab_size=2,
    )
    fields.update(config)
    torch.manual_seed(seed)
    hf_config = transformers.AlbertConfig(attn_implementation="eager", **fields)
    model = getattr(transformers, class_name)(hf_config).eval()
    with torch.no_grad():
        for param in model.parameters():
            param.normal_(0.0, 0.3)
    model.save_pretrained(directory)
    return model


def hf_outputs(model, batch):
    """sequence/pooled output, and (for a pretraining model) MLM logits at the masked
    positions and SOP logits, as numpy."""
    import torch

    kwargs = dict(
        input_ids=torch.tensor(batch["input_ids"], dtype=torch.long),
        attention_mask=torch.tensor(batch["input_mask"], dtype=torch.long),
        token_type_ids=torch.tensor(batch["segment_ids"], dtype=torch.long),
    )
    with torch.no_grad():
        backbone = model.albert if hasattr(model, "albert") else model
        base = backbone(**kwargs)
        out = {
            "sequence_output": base.last_hidden_state.numpy(),
            "pooled_output": base.pooler_output.numpy(),
        }
        if hasattr(model, "albert"):
            full = model(**kwargs)
            positions = batch["masked_lm_positions"][:, :, None]
            out["mlm_logits"] = np.take_along_axis(full.prediction_logits.numpy(), positions, 1)
            out["sop_logits"] = full.sop_logits.numpy()
    return out


def official_arrays(model, groups, inner_groups, heads=True):
    """The HF model's values under the official TF1 names and shapes."""
    sd = {k: v.detach().numpy() for k, v in model.state_dict().items()}
    sd = {k[len("albert.") :] if k.startswith("albert.") else k: v for k, v in sd.items()}
    out = {
        "bert/embeddings/word_embeddings": sd["embeddings.word_embeddings.weight"],
        "bert/embeddings/position_embeddings": sd["embeddings.position_embeddings.weight"],
        "bert/embeddings/token_type_embeddings": sd["embeddings.token_type_embeddings.weight"],
        "bert/embeddings/LayerNorm/gamma": sd["embeddings.LayerNorm.weight"],
        "bert/embeddings/LayerNorm/beta": sd["embeddings.LayerNorm.bias"],
        "bert/encoder/embedding_hidden_mapping_in/kernel": sd[
            "encoder.embedding_hidden_mapping_in.weight"
        ].T,
        "bert/encoder/embedding_hidden_mapping_in/bias": sd[
            "encoder.embedding_hidden_mapping_in.bias"
        ],
        "bert/pooler/dense/kernel": sd["pooler.weight"].T,
        "bert/pooler/dense/bias": sd["pooler.bias"],
    }
    dense = {
        "attention_1/self/query": "attention.query",
        "attention_1/self/key": "attention.key",
        "attention_1/self/value": "attention.value",
        "attention_1/output/dense": "attention.dense",
        "ffn_1/intermediate/dense": "ffn",
        "ffn_1/intermediate/output/dense": "ffn_output",
    }
    norms = {"LayerNorm": "attention.LayerNorm", "LayerNorm_1": "full_layer_layer_norm"}
    for g in range(groups):
        for k in range(inner_groups):
            tf_prefix = f"bert/encoder/transformer/group_{g}/inner_group_{k}/"
            hf_prefix = f"encoder.albert_layer_groups.{g}.albert_layers.{k}."
            for tf_name, hf_name in dense.items():
                out[tf_prefix + tf_name + "/kernel"] = sd[hf_prefix + hf_name + ".weight"].T
                out[tf_prefix + tf_name + "/bias"] = sd[hf_prefix + hf_name + ".bias"]
            for tf_name, hf_name in norms.items():
                out[tf_prefix + tf_name + "/gamma"] = sd[hf_prefix + hf_name + ".weight"]
                out[tf_prefix + tf_name + "/beta"] = sd[hf_prefix + hf_name + ".bias"]
    if heads:
        out.update(
            {
                "cls/predictions/transform/dense/kernel": sd["predictions.dense.weight"].T,
                "cls/predictions/transform/dense/bias": sd["predictions.dense.bias"],
                "cls/predictions/transform/LayerNorm/gamma": sd["predictions.LayerNorm.weight"],
                "cls/predictions/transform/LayerNorm/beta": sd["predictions.LayerNorm.bias"],
                "cls/predictions/output_bias": sd["predictions.bias"],
                "cls/seq_relationship/output_weights": sd["sop_classifier.classifier.weight"],
                "cls/seq_relationship/output_bias": sd["sop_classifier.classifier.bias"],
            }
        )
    return out


def write_tf1_checkpoint(prefix, arrays, module_prefix=False, optimizer_slots=True):
    """Writes a real TF1 name-based checkpoint (graph mode, tf.compat.v1 Saver), with
    `global_step` and Adam/LAMB slots as the official trainer leaves them."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        variables = []
        for name, value in arrays.items():
            full = f"module/{name}" if module_prefix else name
            variables.append(tf.compat.v1.Variable(value.astype(np.float32), name=full))
            if optimizer_slots:
                for slot in ("adam_m", "adam_v"):
                    variables.append(
                        tf.compat.v1.Variable(
                            np.full(value.shape, 7.0, np.float32), name=f"{full}/{slot}"
                        )
                    )
        variables.append(tf.compat.v1.Variable(np.int64(1000), name="global_step"))
        saver = tf.compat.v1.train.Saver(var_list=variables)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            return saver.save(session, prefix, write_meta_graph=False)

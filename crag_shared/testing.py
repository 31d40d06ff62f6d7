"""Build small real evaluator checkpoints offline: for tests, examples and speed benchmarks.

Nothing is downloaded: a word-level tokenizer is trained on the texts you pass, a randomly initialised
model is created from a hand-written config, and both are written with `save_pretrained`, so they load
through the same code path as a real checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from .evaluators.hf import require_torch

SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "</s>"]


def build_tokenizer(texts: Iterable[str], path: str | Path, kind: Literal["t5", "bert"],
                    vocab_size: int = 4000):
    """Train a lower-cased word-level tokenizer on `texts` and save it as a fast tokenizer.

    `kind="t5"` appends `</s>` to every sequence (T5's classification head reads the final EOS);
    `kind="bert"` builds `[CLS] a [SEP] b [SEP]` pairs with token type ids.
    """
    _, transformers = require_torch()
    from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
    from tokenizers.models import WordLevel
    from tokenizers.trainers import WordLevelTrainer

    tokenizer = Tokenizer(WordLevel(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.Sequence([normalizers.NFKC(), normalizers.Lowercase()])
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(list(texts), WordLevelTrainer(vocab_size=vocab_size, special_tokens=SPECIAL))
    ids = {t: tokenizer.token_to_id(t) for t in SPECIAL}
    if kind == "t5":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="$A </s>", pair="$A </s> $B </s>", special_tokens=[("</s>", ids["</s>"])])
        extra = {"eos_token": "</s>"}
    else:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])])
        extra = {"cls_token": "[CLS]", "sep_token": "[SEP]"}
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]",
                                                unk_token="[UNK]", model_max_length=512, **extra)
    if kind == "t5":
        fast.model_input_names = ["input_ids", "attention_mask"]
    fast.save_pretrained(str(path))
    return fast


def build_t5_evaluator(path: str | Path, texts: Iterable[str], *, d_model: int = 32, layers: int = 2,
                       heads: int = 2, d_ff: int = 64, seed: int = 0) -> Path:
    """A randomly initialised `T5ForSequenceClassification` (num_labels=1) in the paper's format.

    Pass `d_model=512, layers=6, heads=8, d_ff=2048` for a T5-small-sized model.
    """
    torch, transformers = require_torch()
    path = Path(path)
    tokenizer = build_tokenizer(texts, path, "t5")
    torch.manual_seed(seed)
    config = transformers.T5Config(
        vocab_size=len(tokenizer), d_model=d_model, d_kv=d_model // heads, d_ff=d_ff, num_layers=layers,
        num_decoder_layers=layers, num_heads=heads, num_labels=1, problem_type="regression",
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
        decoder_start_token_id=tokenizer.pad_token_id)
    transformers.T5ForSequenceClassification(config).save_pretrained(str(path))
    return path


def build_bert_evaluator(path: str | Path, texts: Iterable[str], *, hidden: int = 32, layers: int = 2,
                         heads: int = 2, intermediate: int = 64, num_labels: int = 1, seed: int = 0) -> Path:
    """A randomly initialised BERT-style `BertForSequenceClassification` cross-encoder."""
    torch, transformers = require_torch()
    path = Path(path)
    tokenizer = build_tokenizer(texts, path, "bert")
    torch.manual_seed(seed)
    config = transformers.BertConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
        intermediate_size=intermediate, max_position_embeddings=512, num_labels=num_labels,
        pad_token_id=tokenizer.pad_token_id)
    transformers.BertForSequenceClassification(config).save_pretrained(str(path))
    return path

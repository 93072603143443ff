"""A tiny chat model built on the spot, for training runs on a CPU: no download, nothing cached.

The tokenizer is a byte-level BPE trained on the texts it is given, with no word splitting
first, so a string those texts repeat (a system prompt, a file path) becomes one token or a
few, and any other text still encodes, byte by byte at worst: on a CPU, sequence length is
the cost. Its chat template is
Qwen's ChatML: `<|im_start|>role ... <|im_end|>`, tool calls in `<tool_call>` blocks and tool
results in `<tool_response>` blocks of a user turn, `<|im_end|>` as the end of a turn and of
generation. It lists the tools compactly, one line of name and parameter names each: a model this
size cannot use the descriptions, and on a CPU a prompt with the full schemas (about 1,500
tokens for four tools) would be most of the cost of every step. The model is a Qwen2 decoder with random weights and a few
hundred thousand parameters.

Needs the trainer's heavy extra (torch, transformers): scripts/trainer-extra.sh.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

PAD = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
# Written by the model and read back by the loop: added tokens, not special, so decoding keeps them.
MARKUP = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

# Written with explicit strings: transformers renders templates with trim_blocks and lstrip_blocks.
CHAT_TEMPLATE = (
    "{%- if messages[0].role == 'system' %}{%- set system = messages[0].content %}{%- set rest = messages[1:] %}"
    "{%- else %}{%- set system = '' %}{%- set rest = messages %}{%- endif %}"
    "{%- if tools or system %}"
    "{{- '<|im_start|>system\\n' + system }}"
    "{%- if tools %}"
    '{{- \'\\n\\n# Tools\\n\\nCall a tool with <tool_call>{\\"name\\": ..., \\"arguments\\": {...}}</tool_call>. The tools:\' }}'
    "{%- for tool in tools %}{%- set fn = tool.function if tool.function is defined else tool %}"
    "{{- '\\n- ' + fn.name + '(' + ((fn.parameters or {}).get('properties') or {}).keys() | join(', ') + ')' }}"
    "{%- endfor %}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for message in rest %}"
    "{%- if message.role == 'tool' %}"
    "{%- if loop.first or rest[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\\n<tool_response>\\n' + message.content + '\\n</tool_response>' }}"
    "{%- if loop.last or rest[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\\n' }}{%- endif %}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' + (message.content or '') }}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- set fn = call.function if call.function is defined else call %}"
    "{%- set args = fn.arguments if fn.arguments is string else (fn.arguments | tojson) %}"
    "{{- '\\n<tool_call>\\n{\\\"name\\\": \\\"' + fn.name + '\\\", \\\"arguments\\\": ' + args + '}\\n</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- else %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)


@dataclass(frozen=True)
class TinyModelConfig:
    vocab_size: int = 2048
    hidden_size: int = 64
    intermediate_size: int = 128
    layers: int = 2
    heads: int = 4
    kv_heads: int = 2
    max_positions: int = 8192
    seed: int = 0


def build_tokenizer(
    corpus: Iterable[str], vocab_size: int = 2048, words: Sequence[str] = ()
) -> PreTrainedTokenizerFast:
    """A byte-level BPE trained on `corpus`, with the ChatML tool template above.

    Each of `words` is one token wherever it appears, whatever surrounds it (BPE without word
    splitting would merge it with its neighbours differently in a file and in an answer): copying
    one of them from a tool's output into an answer is then copying one token."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[PAD, IM_START, IM_END],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(corpus, trainer)
    bpe.add_tokens([AddedToken(t, special=False, normalized=False) for t in [*MARKUP, *words]])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=IM_END, pad_token=PAD)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_model(
    tokenizer: PreTrainedTokenizerFast, config: TinyModelConfig | None = None
) -> Qwen2ForCausalLM:
    """A Qwen2 decoder with random weights sized for `tokenizer`."""
    config = config or TinyModelConfig()
    torch.manual_seed(config.seed)
    model = Qwen2ForCausalLM(
        Qwen2Config(
            vocab_size=len(tokenizer),
            hidden_size=config.hidden_size,
            intermediate_size=config.intermediate_size,
            num_hidden_layers=config.layers,
            num_attention_heads=config.heads,
            num_key_value_heads=config.kv_heads,
            max_position_embeddings=config.max_positions,
            tie_word_embeddings=True,
            eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id,
            bos_token_id=None,
        )
    )
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model

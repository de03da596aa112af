"""Prompts of exact token counts, for traffic planned in tokens (`sim.workload`).

A prompt is made of words from `WORDS`, each with its leading space, picked at random with a
generator seeded by the name of the prompt's segment (`RequestSpec.prompt_segments`: a shared
prefix, a conversation's question, a trace's hash block, or the request itself) and the run's
salt: within a run, segments of the same name are the same text, so prompts that share a prefix
in the plan share it as text, and unrelated prompts differ from their first word; a new run has
new text, so a server's prefix cache never serves it from an earlier run (vllm bench serve's
random prompts depend on --seed alone, and the same seed sends the same prompts again). A
conversation's earlier answers are the text the server generated.

How many tokens a word is, is the server's business:

- `/tokenize` (vLLM's route): the words are counted there once (all together, then one by one
  if the total is not one a word), and only words the server's tokenizer counts as one token are
  used, so a prompt of N words is N tokens there; the special tokens the server adds to every
  prompt (a BOS token) are counted too and left out of its first segment, so the server sees the
  planned length, as vllm bench serve's random dataset does;
- without it, the rule: a word is a token (`batchtui serve` counts each of these words as one; a
  real tokenizer about one each), and the server's own counts (`usage.prompt_tokens`) are what
  the result records.

A dataset's prompts (ShareGPT, custom) are sent as the file's text.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets

# Common English words of at most six letters, each with its leading space: one token each by
# batchtui serve's rule (sim.workload.estimate_tokens), and common enough to be one token in the
# vocabularies of byte-level BPE tokenizers, which /tokenize checks when the server has it.
WORDS = tuple(" " + w for w in """
the of and to in is it you that he was for on are as with his they at be this have from or one
had by word but not what all were we when your can said there use an each which she do how their
if will up other about out many then them these so some her would make like him into time has
look two more write go see number no way could people my than first water been call who oil its
now find long down day did get come made may part over new sound take only little work know place
year live me back give most very after thing our just name good man think say great where help
much before line right too mean old any same tell boy follow came want show also around
form three small set put end does well large must big even such turn here why ask
went men read need land differ home us move try kind hand again change off play spell air
away animal house point page letter mother answer found study still learn should world high every
near add food own below plant last school father keep tree never start city earth
eye light though head under story saw left few while along might close seem next hard open
""".split())


class Prompts:
    """Texts of planned token counts; made with `prepare` (which asks the server's /tokenize)."""

    def __init__(self, words=WORDS, specials: int = 0, exact: bool = False, rule: str = "",
                 dataset_prompts=None, salt: str | None = None) -> None:
        self.salt = secrets.token_hex(8) if salt is None else salt
        """Mixed into every segment's words: a run's prompts are its own (see the module's doc)."""
        self.words = tuple(words)
        self.specials = specials
        """Tokens the server adds to every prompt (left out of a prompt's first segment)."""
        self.exact = exact
        """True: the server's /tokenize counts each word as one token."""
        self.rule = rule
        """How prompts are made, in a sentence (printed, and kept in the result)."""
        self.dataset_prompts = dataset_prompts
        self.answers: dict[str, str] = {}
        """Conversations' answers by segment name (`sim.workload.answer_segment`), as generated
        (`answered`): those of the last `KEPT_CONVERSATIONS` conversations answered."""
        self._answered: dict[str, list[str]] = {}
        """Each kept conversation's answer names, the one answered longest ago first."""
        self._shared: dict[tuple[str, int], str] = {}

    def answered(self, spec, text: str) -> None:
        """The server's answer to a conversation's turn: its later turns send it back. A live
        session's traffic never ends: past `KEPT_CONVERSATIONS` conversations, the one answered
        longest ago is forgotten (a turn of it that still comes sends words in its answers'
        place, as many tokens as planned)."""
        name = spec.output_segment
        if name is None:
            return
        names = self._answered.pop(spec.conversation, [])
        names.append(name)
        self._answered[spec.conversation] = names
        self.answers[name] = text
        if len(self._answered) > KEPT_CONVERSATIONS:
            for old in self._answered.pop(next(iter(self._answered))):
                self.answers.pop(old, None)

    def segment(self, name: str, n: int) -> str:
        """`n` words, the same for the same name."""
        import numpy as np

        if n <= 0:
            return ""
        seed = int.from_bytes(hashlib.blake2b(f"{self.salt}\x00{name}".encode(), digest_size=8).digest(), "little")
        picks = np.random.default_rng(seed).integers(0, len(self.words), size=n)
        words = self.words
        return "".join([words[i] for i in picks.tolist()])

    def parts(self, spec) -> list[tuple[str, str]]:
        """The prompt of a planned request as (role, text) parts: "user" text, and a
        conversation's earlier answers as "assistant" parts."""
        segments = spec.prompt_segments or ((spec.request_id, spec.prompt_len),)
        out: list[tuple[str, str]] = []
        for k, (name, n) in enumerate(segments):
            if name in self.answers:
                out.append(("assistant", self.answers[name]))
                continue
            if k == 0:
                n = max(1, n - self.specials)
            if name == spec.request_id and self.dataset_prompts is not None:
                text = self.dataset_prompts[int(name)]
            elif name == spec.request_id or "/q" in name:  # the request's own words: made once
                text = self.segment(name, n)
            else:  # a shared prefix or a trace's hash block: repeated by other requests
                text = self._shared.get((name, n))
                if text is None:
                    if len(self._shared) >= SHARED_KEPT:
                        self._shared.clear()
                    text = self._shared[name, n] = self.segment(name, n)
            if out and out[-1][0] == "user":
                out[-1] = ("user", out[-1][1] + text)
            else:
                out.append(("user", text))
        return out

    def prompt(self, spec, chat: bool):
        """A completion's prompt text, or a chat's messages."""
        parts = self.parts(spec)
        if chat:
            return [{"role": role, "content": text} for role, text in parts]
        return "".join(text for _, text in parts)


RULE_WORDS = ("a word a token: the server has no /tokenize route, so each prompt of N tokens is N common "
              "English words ({server} counts such a word as one token; a real tokenizer about one each), "
              "and the result records the server's own counts")
EXACT_WORDS = ("exact: words the server's /tokenize counts as one token each ({words} of them){specials}")
SHARED_KEPT = 4096
"""Shared segments' texts kept (prefixes, hash blocks); past it the store starts again."""
KEPT_CONVERSATIONS = 4096
"""Conversations whose answers are kept (`Prompts.answered`): far more than are ever in flight at
once (a conversation's turns come a think time apart)."""
PROBE_CONCURRENCY = 16
MIN_WORDS = 32
"""Fewer single-token words than this and the rule is used instead."""


async def prepare(client, dataset_prompts=None, server: str = "batchtui serve") -> Prompts:
    """Prompts for this server: exact through its /tokenize when it has one, else the rule."""
    whole = await client.tokenize("".join(WORDS))
    if whole is None:
        return Prompts(rule=RULE_WORDS.format(server=server), dataset_prompts=dataset_prompts)
    words = WORDS
    if whole != len(WORDS):
        gate = asyncio.Semaphore(PROBE_CONCURRENCY)

        async def count(word: str):
            async with gate:
                return await client.tokenize(word)

        counts = await asyncio.gather(*(count(w) for w in WORDS))
        words = tuple(w for w, c in zip(WORDS, counts) if c == 1)
        if len(words) < MIN_WORDS:
            return Prompts(rule=RULE_WORDS.format(server=server) + f" (its /tokenize counts only {len(words)} of "
                           "the words as one token)", dataset_prompts=dataset_prompts)
    plain = await client.tokenize(words[0])
    marked = await client.tokenize(words[0], add_special_tokens=True)
    specials = max(0, (marked or 0) - (plain or 0))
    said = (f"; the {specials} special token{'s' if specials != 1 else ''} the server adds to a prompt "
            "counted in" if specials else "")
    return Prompts(words, specials, True, EXACT_WORDS.format(words=len(words), specials=said),
                   dataset_prompts=dataset_prompts)

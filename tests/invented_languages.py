"""Two invented languages with a word-for-word dictionary: a translation task a tiny model learns in seconds.

Capitalised words are entities (PER or LOC); a sentence's translation has the same tags as the
sentence, so every labeled-translation and projection result has a known right answer.
"""

from __future__ import annotations

import random

from crop_hf.labels import tags_to_spans
from crop_hf.markers import mark_tokens

CONSONANTS, VOWELS = "bdfgklmnprstvz", "aeiou"


class InventedLanguages:
    """Two invented languages with a word-for-word dictionary; capitalised words are entities."""

    def __init__(self, seed: int = 0) -> None:
        rng = random.Random(seed)
        words: set[str] = set()
        while len(words) < 60:
            words.add("".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(2)))
        ordered = sorted(words)
        source, target = ordered[:30], ordered[30:]
        self.dictionary = dict(zip(source, target, strict=True))
        self.names = {"PER": [w.capitalize() for w in source[:6]], "LOC": [w.capitalize() for w in source[6:12]]}
        self.common = source[12:]

    def translate_word(self, word: str) -> str:
        if word.startswith("__"):
            return word
        translated = self.dictionary[word.lower()]
        return translated.capitalize() if word[0].isupper() else translated

    def sentence(self, rng: random.Random) -> dict:
        tokens = [rng.choice(self.common) for _ in range(rng.randint(3, 5))]
        tags = ["O"] * len(tokens)
        for position in sorted(rng.sample(range(len(tokens) + 1), rng.randint(1, 2)), reverse=True):
            label = rng.choice(["PER", "LOC"])
            tokens.insert(position, rng.choice(self.names[label]))
            tags.insert(position, f"B-{label}")
        return {"tokens": tokens, "ner_tags": tags}

    def pair(self, record: dict) -> tuple[str, str]:
        """The source sentence with markers around its entities, and its marked translation."""
        marked = mark_tokens(record["tokens"], tags_to_spans(record["ner_tags"])).text
        return marked, " ".join(self.translate_word(word) for word in marked.split())

    def target_tokens(self, record: dict) -> list[str]:
        """The translation of a source sentence, word for word (its tags are the source's)."""
        return [self.translate_word(word) for word in record["tokens"]]

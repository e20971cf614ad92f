"""For the tests of what meaning re-orders (the diversity re-ordering, the second search): a stub embedder through the
`Embedder` protocol whose meaning the test chooses, and a query result as `kg query` prints it.

`TopicEmbedder`: a text's vector is its share of a few topic words (each count times the topic's weight), scaled up,
plus a small hashed remainder, so texts about the same topics are near in meaning whatever their other words."""

from __future__ import annotations

import click
import numpy as np
from click.testing import CliRunner

from retrieval.vectors.embedders import HashEmbedder


class TopicEmbedder:
    def __init__(self, topics: dict[str, float], model_id: str) -> None:
        self.topics = topics
        self.model_id = model_id
        self._rest = HashEmbedder(16)

    def _vector(self, text: str) -> np.ndarray:
        lowered = text.lower()
        shares = np.array([weight * lowered.count(word) for word, weight in self.topics.items()], np.float32)
        shares = shares / max(float(np.linalg.norm(shares)), 1e-6)
        vec = np.concatenate([shares * 4.0, 0.3 * self._rest.embed_query(text)])
        return vec / max(float(np.linalg.norm(vec)), 1e-6)

    def embed_passages(self, texts):
        return np.stack([self._vector(t) for t in texts]) if texts else np.zeros((0, len(self.topics) + 16), np.float32)

    def embed_query(self, text):
        return self._vector(text)


def printed_lines(result) -> list[str]:
    """`result` as the CLI's human output shows it (`kg query` without --json), a line each."""
    from kg.cli.search import print_result

    @click.command()
    def show():
        print_result(result)

    return CliRunner().invoke(show).output.splitlines()

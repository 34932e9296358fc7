"""Lexical evidence from the index's own statistics (G10, G32).

A query's terms are the index's own tokens (the FTS5 tokenizer of the generation, read from
its schema: Porter stemming over unicode61 in current generations, so ``appointments`` meets
``appointment``). Each term weighs its inverse document frequency in this index, so what every
record shares (``the``, ``is``, ``der``, ``się``) weighs almost nothing, in any language, with
no word list (G32). A candidate's evidence is the weighted share of the query's terms it holds,
0..1.

A young index knows too little to tell a function word from a rare one (in three records
``is`` and ``dentist`` may both occur once). The document frequencies are therefore smoothed
toward a prior taken from Zipf's law of abbreviation, which holds across languages: the shorter
a word, the more often it occurs. ``PRIOR_DOCUMENTS`` imaginary records carry each term at its
length's prior rate, so the prior decides in an index of a handful of records and fades as the
index grows.
"""

from __future__ import annotations

import math
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import apsw

PRIOR_DOCUMENTS: Final = 20.0
COMMON_SHARE: Final = 0.5  # a term more than half the records hold is not worth a lookup ...
COMMON_MIN_DOCS: Final = 1000  # ... once the index is large enough for that to cost
# The bm25 lookup reads every posting of every word it is given, so its cost grows with the
# index. Words are taken rarest first until their postings would pass this budget (the rarest
# always stays): the lookup costs the same at 100k records as at 1M. At 100,000 generated
# records, 3-7-word fragments of a stored text find it in the bm25 top 10 92 % of the time with
# the budget against 94 % without, in 6 ms instead of 19 (bench/recall_latency.py); the vector
# retriever and the evidence, which still weigh every word, do not depend on it.
POSTING_BUDGET: Final = 20_000
# The share of records a term is assumed to occur in before the index says otherwise, by the
# term's length in code points (Zipf's law of abbreviation); terms without a letter (numbers,
# dates, id parts) are specific, like long words.
_PRIOR_BY_LENGTH: Final = (0.5, 0.5, 0.35, 0.2, 0.08, 0.03)  # lengths 1..5, then 6+
_PRIOR_NUMBER: Final = 0.03
_TOKENIZE_RE: Final = re.compile(r"tokenize\s*=\s*'([^']*)'", re.IGNORECASE)
_DEFAULT_TOKENIZER: Final = ("unicode61", ["remove_diacritics", "2"])

Tokenizer = Callable[[str], list[str]]
_tokenizers: weakref.WeakKeyDictionary[apsw.Connection, Tokenizer] = \
    weakref.WeakKeyDictionary()


def index_tokenizer(conn: apsw.Connection) -> Tokenizer:
    """The FTS5 tokenizer the generation's ``memories_fts`` was built with, as a function from
    text to its tokens (lowercased, diacritics folded, stemmed where the index stems)."""
    found = _tokenizers.get(conn)
    if found is not None:
        return found
    row: Any = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories_fts'"
                            ).fetchone()
    spec = _TOKENIZE_RE.search(row[0]) if row is not None else None
    if spec is not None:
        words = spec.group(1).split()
        name, args = words[0], words[1:]
    else:
        name, args = _DEFAULT_TOKENIZER
    fts = conn.fts5_tokenizer(name, list(args))

    def tokens(text: str) -> list[str]:
        return [str(t[2]) for t in fts(text.encode("utf-8"), apsw.FTS5_TOKENIZE_DOCUMENT,
                                      None) if len(t) > 2]

    _tokenizers[conn] = tokens
    return tokens


def _prior(term: str) -> float:
    if not any(ch.isalpha() for ch in term):
        return _PRIOR_NUMBER
    return _PRIOR_BY_LENGTH[min(len(term), len(_PRIOR_BY_LENGTH)) - 1]


def idf(doc_freq: float, docs: float) -> float:
    """BM25's non-negative inverse document frequency."""
    return math.log(1.0 + (docs - doc_freq + 0.5) / (doc_freq + 0.5))


class LexicalEvidence:
    """The query's terms and their weights in one index; :meth:`coverage` scores a text."""

    def __init__(self, terms: Sequence[str], weights: Sequence[float],
                 tokenizer: Tokenizer, frequency: dict[str, int] | None = None,
                 docs: float = 0.0) -> None:
        self.terms = tuple(terms)
        self.weights = tuple(weights)
        self._tokens = tokenizer
        self._total = sum(weights)
        self._frequency = frequency or {}
        self._docs = docs

    @classmethod
    def for_query(cls, conn: apsw.Connection, query: str) -> LexicalEvidence:
        tokens = index_tokenizer(conn)
        terms = list(dict.fromkeys(tokens(query)))
        if not terms:
            return cls((), (), tokens)
        docs_row: Any = conn.execute("SELECT count(*) FROM memories").fetchone()
        docs = float(docs_row[0])
        frequency = document_frequencies(conn, terms)
        weights = []
        for term in terms:
            prior = _prior(term)
            weights.append(idf(frequency.get(term, 0) + PRIOR_DOCUMENTS * prior,
                               docs + PRIOR_DOCUMENTS))
        return cls(terms, weights, tokens, frequency, docs)

    def retrieval_words(self, query: str) -> list[str]:
        """The query's words worth a bm25 lookup: those with a term that at most half the
        records hold, rarest first within :data:`POSTING_BUDGET`. A word every other record
        holds cannot rank anything, and long doclists are what makes a full-text query slow on
        a large index. At least the rarest word is kept, so a query of common words still
        retrieves. Words keep their order in the query; a word no record holds is left out."""
        words = query.split()
        if self._docs < COMMON_MIN_DOCS:
            return words
        rarity: list[tuple[int, int]] = []  # (the word's rarest term's frequency, index)
        for n, word in enumerate(words):
            rarest = min((self._frequency.get(t, 0) for t in self._tokens(word)), default=0)
            if rarest:  # a word with a term no record holds (or no term) matches nothing
                rarity.append((rarest, n))
        rarity.sort()
        keep: list[int] = []
        postings = 0
        for freq, n in rarity:
            if keep and (freq > COMMON_SHARE * self._docs or postings + freq > POSTING_BUDGET):
                break
            keep.append(n)
            postings += freq
        return [words[n] for n in sorted(keep)]

    def coverage(self, text: str) -> float:
        """The weighted share of the query's terms that ``text`` holds, 0..1."""
        if not self._total:
            return 0.0
        have = set(self._tokens(text))
        return sum(w for t, w in zip(self.terms, self.weights, strict=True) if t in have) \
            / self._total

    def explain(self) -> dict[str, float]:
        """Each query term's weight (for ``explain``)."""
        return dict(zip(self.terms, (round(w, 4) for w in self.weights), strict=True))


class _Frequencies:
    """One connection's document frequencies, valid while its database is unchanged: the
    key is SQLite's ``data_version`` (changes by other connections) and the connection's own
    ``total_changes`` (its own writes), so a cached count is always the index's count now."""

    def __init__(self) -> None:
        self.version: tuple[int, int] = (-1, -1)
        self.counts: dict[str, int] = {}


_frequencies: weakref.WeakKeyDictionary[apsw.Connection, _Frequencies] = \
    weakref.WeakKeyDictionary()
_FREQUENCIES_KEPT: Final = 4096  # terms per connection, then the cache starts over


def document_frequencies(conn: apsw.Connection, terms: Iterable[str]) -> dict[str, int]:
    """How many records hold each term, from FTS5's own vocabulary (``fts5vocab``), read
    through a temporary table so read-only connections and older generations work alike.
    fts5vocab counts a term's records by reading its whole doclist (~3 ms for a word in a
    third of a million records), so counts are kept per connection until the index changes."""
    wanted = list(dict.fromkeys(terms))
    if not wanted:
        return {}
    conn.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_fts_terms "
                 "USING fts5vocab(main, memories_fts, row)")
    row: Any = conn.execute("PRAGMA data_version").fetchone()
    version = (int(row[0]), conn.total_changes())
    kept = _frequencies.setdefault(conn, _Frequencies())
    if kept.version != version or len(kept.counts) > _FREQUENCIES_KEPT:
        kept.version, kept.counts = version, {}
    missing = [t for t in wanted if t not in kept.counts]
    if missing:
        marks = ",".join("?" * len(missing))
        found = {str(term): int(doc) for term, doc in conn.execute(
            f"SELECT term, doc FROM temp.memories_fts_terms WHERE term IN ({marks})", missing)}
        kept.counts.update({t: found.get(t, 0) for t in missing})
    return {t: kept.counts[t] for t in wanted if kept.counts[t]}

"""Small generated parallel corpora for tests, benchmarks and smoke runs — the project's one toy-corpus
generator (the quickstart's realistic synthetic corpus is :mod:`macaron_synthetic.en_de`).

Two styles over one aligned :class:`Lexicon` (source word *i* translates to target word *i*):

* :func:`symbol_pair` — a learnable toy *translation* task: random source symbols, the target is their
  word-by-word translation with the first word moved to the end (needs attention beyond the diagonal).
  Used to train tiny models (the test suite's data-bin, the DT-Fixup benchmarks).
* :func:`sentence_pair` — word-like *text* for the text steps: capitalised sentences with punctuation,
  the same word indices on both sides (so lengths match); optionally Zipf-distributed words and
  decorations (possessives, numbers, hyphenated compounds, quotes). Used by the preprocessing tests and
  the throughput benchmark.

Everything is a pure function of the ``random.Random`` it is given, so a seed fixes the corpus.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from macaron_workflow import processes

EN_WORDS = (
    "the a house cat dog runs quickly slowly over under big small red green blue table chair window door "
    "garden river mountain city street teacher student book letter music evening morning friend"
).split()
DE_WORDS = (
    "das ein haus katze hund läuft schnell langsam über unter groß klein rot grün blau tisch stuhl fenster "
    "tür garten fluss berg stadt straße lehrer schüler buch brief musik abend morgen freund"
).split()
_SYLLABLES = [c + v for c in "bdfgklmnprstvwz" for v in "aeiou"] + ["sch", "ung", "ei", "au", "ie"]


@dataclass(frozen=True)
class Lexicon:
    """Aligned vocabularies: ``src[i]`` translates to ``tgt[i]``."""

    src: tuple[str, ...]
    tgt: tuple[str, ...]

    def __post_init__(self) -> None:
        if len(self.src) != len(self.tgt) or not self.src:
            raise ValueError(f"aligned non-empty vocabularies needed, got {len(self.src)}, {len(self.tgt)}")

    def __len__(self) -> int:
        return len(self.src)

    @classmethod
    def symbols(cls, size: int, src_prefix: str = "s", tgt_prefix: str = "t") -> Lexicon:
        """``s0 s1 ...`` ↔ ``t0 t1 ...``."""
        return cls(
            tuple(f"{src_prefix}{i}" for i in range(size)), tuple(f"{tgt_prefix}{i}" for i in range(size))
        )

    @classmethod
    def words(cls) -> Lexicon:
        """30 English words ↔ their German translations (umlauts included)."""
        return cls(tuple(EN_WORDS), tuple(DE_WORDS))

    @classmethod
    def pseudo_words(cls, size: int, rng: random.Random) -> Lexicon:
        """``size`` random syllable words per side (a large vocabulary for BPE and throughput)."""

        def draw() -> tuple[str, ...]:
            return tuple(
                "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(1, 4))) for _ in range(size)
            )

        src = draw()
        return cls(src, draw())


def zipf_weights(size: int) -> list[float]:
    """Cumulative Zipf weights (rank r has weight 1/r) for ``random.choices(cum_weights=...)``."""
    cumulative, total = [], 0.0
    for rank in range(size):
        total += 1 / (rank + 1)
        cumulative.append(total)
    return cumulative


def symbol_pair(rng: random.Random, lexicon: Lexicon, min_words: int, max_words: int) -> tuple[str, str]:
    """Source symbols and their translation with the first word moved to the end."""
    words = [rng.randrange(len(lexicon)) for _ in range(rng.randint(min_words, max_words))]
    target = [lexicon.tgt[i] for i in words]
    return " ".join(lexicon.src[i] for i in words), " ".join(target[1:] + target[:1])


@dataclass(frozen=True)
class SentenceStyle:
    """How :func:`sentence_pair` realises word indices as text."""

    min_words: int = 3
    max_words: int = 14
    zipf: list[float] | None = None  # cumulative weights; None = uniform words
    decorate: bool = False  # possessives/numbers, compounds, quotes and varied punctuation (30% each)
    tail: tuple[str, str] = (", isn't it?", ", nicht wahr?")  # fixed ending when not decorated


def sentence_pair(
    rng: random.Random, lexicon: Lexicon, style: SentenceStyle = SentenceStyle()
) -> tuple[str, str]:
    """A capitalised sentence pair; the same word indices on both sides."""
    n = rng.randint(style.min_words, style.max_words)
    if style.zipf is None:
        idx = [rng.randrange(len(lexicon)) for _ in range(n)]
    else:
        idx = rng.choices(range(len(lexicon)), cum_weights=style.zipf, k=n)
    src = [lexicon.src[i] for i in idx]
    tgt = [lexicon.tgt[i] for i in idx]
    if not style.decorate:
        return " ".join(src).capitalize() + style.tail[0], " ".join(tgt).capitalize() + style.tail[1]
    if rng.random() < 0.3:
        src[0] += "'s"
        tgt.insert(rng.randrange(n), f"{rng.randint(1, 9999)},{rng.randint(0, 99)}")
    if rng.random() < 0.3:
        src.insert(rng.randrange(n), f"{src[-1]}-{src[0]}")
    punct = rng.choice(".?!")
    src_text = " ".join(src).capitalize() + ", " + rng.choice(['"yes"', "(no)", "ok"]) + punct
    tgt_text = " ".join(tgt).capitalize() + ", " + rng.choice(["„ja“", "(nein)", "gut"]) + punct
    return src_text, tgt_text


def sentence_pairs(n: int, seed: int, style: SentenceStyle = SentenceStyle()) -> list[tuple[str, str]]:
    """``n`` pairs of :func:`sentence_pair` over :meth:`Lexicon.words` (the preprocessing tests' text)."""
    rng = random.Random(seed)
    lexicon = Lexicon.words()
    return [sentence_pair(rng, lexicon, style) for _ in range(n)]


def write_bitext(prefix: Path, pairs: Iterable[tuple[str, str]], src: str = "en", tgt: str = "de") -> None:
    """``prefix.src`` / ``prefix.tgt``, one sentence per line."""
    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with (
        open(f"{prefix}.{src}", "w", encoding="utf-8") as src_file,
        open(f"{prefix}.{tgt}", "w", encoding="utf-8") as tgt_file,
    ):
        for a, b in pairs:
            src_file.write(a + "\n")
            tgt_file.write(b + "\n")


@dataclass(frozen=True)
class SymbolTask:
    """A corpus of :func:`symbol_pair` s: splits of the given sizes, drawn in that order from one random
    stream seeded with ``seed``, 3 to ``max_words`` words from a ``vocab``-symbol lexicon."""

    sizes: dict[str, int]
    vocab: int
    max_words: int
    seed: int = 0
    prefixes: tuple[str, str] = ("s", "t")

    def write(self, root: Path) -> None:
        """``root/{split}.src`` / ``root/{split}.tgt``."""
        rng = random.Random(self.seed)
        lexicon = Lexicon.symbols(self.vocab, *self.prefixes)
        for split, n in self.sizes.items():
            pairs = (symbol_pair(rng, lexicon, 3, self.max_words) for _ in range(n))
            write_bitext(root / split, pairs, "src", "tgt")

    def data_bin(self, root: Path) -> Path:
        """Written under ``root`` and binarized into ``root/data-bin`` (reused when its training split is
        already there)."""
        data_bin = root / "data-bin"
        if (data_bin / "train.src-tgt.src.bin").exists():
            return data_bin
        root.mkdir(parents=True, exist_ok=True)
        self.write(root)
        return fairseq_preprocess(root, list(self.sizes), data_bin)


def preprocess_flags(root: Path, splits: Sequence[str], dest: Path) -> list[str]:
    """``fairseq-preprocess``'s flags that binarize ``root/{split}.{src,tgt}`` into ``dest`` (joined
    dictionary, one worker)."""
    flags = {"train": "--trainpref", "valid": "--validpref", "test": "--testpref"}
    command = ["--source-lang", "src", "--target-lang", "tgt"]
    for split in splits:
        command += [flags[split], str(root / split)]
    return [*command, "--destdir", str(dest), "--joined-dictionary", "--workers", "1"]


def fairseq_preprocess(root: Path, splits: Sequence[str], dest: Path) -> Path:
    """Binarize ``root/{split}.{src,tgt}`` with the real ``fairseq-preprocess --joined-dictionary``."""
    proc = processes.run(["fairseq-preprocess", *preprocess_flags(root, splits, dest)], capture=True)
    if proc.status != 0:
        raise RuntimeError(f"fairseq-preprocess failed ({proc.status}):\n{proc.output[-3000:]}")
    return dest

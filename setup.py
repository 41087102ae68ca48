"""macaron-fairseq: Macaron-Net layers and DT-Fixup initialisation as a fairseq --user-dir plugin."""

from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent
#: the plugin, and the checkout's command packages (see docs/architecture.md)
TOP_LEVEL_PACKAGES = (
    "macaron_fairseq", "preprocess", "macaron_workflow", "macaron_tools", "pipelines", "slurm",
)


def read_requirements(name: str) -> list[str]:
    lines = (here / name).read_text().splitlines()
    return [ln.split("#", 1)[0].strip() for ln in lines if ln.split("#", 1)[0].strip()]


setup(
    name="macaron-fairseq",
    version="0.1.0",
    description="Macaron Net (Strang-Marchuk splitting) transformer layers and DT-Fixup for fairseq",
    long_description=(here / "README.md").read_text() if (here / "README.md").exists() else "",
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=[f"{top}{sub}" for top in TOP_LEVEL_PACKAGES for sub in ("", ".*")]),
    # torch is accepted as installed (any CUDA/CPU build >= 2.1). fairseq is NOT declared: the PyPI
    # release does not import on Python 3.11 and the working fork declares torchaudio, which would
    # replace torch; scripts/install.sh installs ve-fairseq==0.12.3 with --no-deps.
    install_requires=["torch>=2.1", *read_requirements("requirements.txt")],
    # hf: python -m macaron_fairseq.hf (HuggingFace import/export) and GLUE with an imported WordPiece model;
    # transformers 5 declares no torch requirement, so it never replaces the installed torch
    extras_require={
        "dev": read_requirements("requirements-dev.txt"),
        "hf": ["transformers>=5.0", "safetensors", "tokenizers"],
    },
)

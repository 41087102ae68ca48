"""The text steps every corpus goes through: Moses tokenization and cleaning of a bitext, holdout splits,
joint sentencepiece BPE, binarization into a fairseq data-bin, and the summary tables."""

"""One-command quickstart: train and evaluate a small Macaron translation model on CPU in a few minutes.

  bash pipelines/quickstart.sh [options]        (installs what is missing, then runs this program)
  python -m macaron_pipelines.quickstart [options]      (this program alone: it never installs anything)

Stages (each resumable: a rerun skips the finished ones, --force redoes them all; completion markers in
WORKDIR/.stages/ and, for preprocessing, WORKDIR/data/.stages/):
  install     bash scripts/install.sh (by quickstart.sh, unless --skip-install or SKIP_INSTALL=1)
  corpus      python -m macaron_synthetic.en_de: generated en→de corpus (or your own files, see below)
  preprocess  python -m macaron_preprocess.custom: sacremoses tokenization, joint sentencepiece BPE, binarized
              data-bin (joined dictionary)
  train       fairseq-train --arch macaron_base ... with the progress display of macaron_tools.train_progress;
              the full JSON log goes to train.log. A rerun with a larger --max-update or --max-epoch
              continues from checkpoints/checkpoint_last.pt; other settings or data move checkpoints/
              and train.log aside (*.before-TIME) and train afresh.
  generate    fairseq-generate --beam 5 --post-process sentencepiece on the test split
  score       macaron_tools.score_bleu: detokenized sacreBLEU + tokenized BLEU -> results/bleu.json
  plot        macaron_tools.plot_curves: train/valid loss per epoch and per update -> results/loss_curves.png
  record      (every run, not a stage) results/quickstart.json: this run's command, date, machine, load,
              versions, threads, wall and CPU time, which stages ran, sacreBLEU, exact matches, the
              copy-the-source baseline and the first test translations

Results: WORKDIR/results/{bleu.json, quickstart.json, loss_curves.png, test.hyp.TGT}, WORKDIR/train.log
(fairseq JSON log), WORKDIR/generate-test.txt (fairseq-generate output), WORKDIR/checkpoints/.

Reproducibility: every stage up to the data-bin is byte-identical whatever the thread count; training
and translation are bit-identical for the same --threads, torch build and CPU kernels. Another thread
count or other kernels change the order of floating-point sums, hence the weights and the BLEU. So the
kernels are pinned to AVX2 on x86 CPUs that have it (--cpu-kernels), and the threads and kernels are part
of the training command: a rerun with others trains afresh (docs/reports/quickstart_runs.md has the
measurements).
"""

"""DeepSpeed pre-training of the plugin's BERT-style models (MLM + NSP).

    python -m macaron_fairseq.pretrain DATA_BIN --arch macaron_bert_base \
        --deepspeed-config configs/deepspeed/bert_phase1.json --save-dir DIR --max-update N

:mod:`.distributed` (rank and rendezvous from torchrun, deepspeed or srun), :mod:`.ds_config` (the DeepSpeed
config checked against the command line; BERT's weight-decay groups), :mod:`.trainer` (the loop) and its
parts: :mod:`.engine` (model and DeepSpeed engine), :mod:`.batches`, :mod:`.step_stats`, :mod:`.evaluation`,
:mod:`.run_log` (messages, step log, tracker, plot), :mod:`.run_state` (save and resume).
"""

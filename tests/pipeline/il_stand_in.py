"""il_stand_in.py -- the IL command of pipeline_e2e_rho: RHO-LOSS's
irreducible-loss model without a model. It checks that it scores only
samples it was not given to train on ($AEGIS_IL_KEYS against
$AEGIS_TRAINSET), and gives sample k the loss k % 3.
"""
import os

import aegis_pipeline

keys = aegis_pipeline.read_trainset(os.environ["AEGIS_IL_KEYS"])[0]
held = aegis_pipeline.read_trainset(os.environ["AEGIS_TRAINSET"])[0]
if set(keys.tolist()) & set(held.tolist()):
    raise SystemExit("the IL model scores samples it trains on")
aegis_pipeline.save_losses(keys % 3)

"""The gate: a run compared with a baseline (drift statistics, matching, the verdict and the
exit decision), baselines found and saved, shard runs assembled into one."""

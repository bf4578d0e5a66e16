"""Learned controllers: training sets from the environment, the scikit-learn rule, the LoRA
policy (and its side-process worker), DAgger and the null baselines."""

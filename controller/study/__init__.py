"""The study: train and compare every controller on a run's traces (experiment), cross-validation
over families and split seeds, and the statistics (paired tests, hypotheses, routing baselines,
power, headroom, failures) the summary holds."""

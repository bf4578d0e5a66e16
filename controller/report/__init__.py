"""What a run writes: report.md (``markdown``), ``figures``, the trace ``viewer``, predictions and
run files (``outputs``) and the ``sft`` export. Reads the summary the study assembled and
computes no statistic of its own. Import the module you need: matplotlib and the viewer's
assets load only with theirs."""

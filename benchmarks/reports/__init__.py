"""How the results files read: one module per benchmark (``reports/NAME.py`` reads what
``benchmarks/NAME.py`` writes, or wrote: a finished study's report outlives its code), each turning a
results file's payload into the markdown of its docs blocks. Only :mod:`benchmarks.doc_tables` uses them
(and tests); a report may import the definitions of the benchmark it reads (its arms, what a finished row
is), a benchmark never imports a report."""

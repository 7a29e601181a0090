
P
ScalarSummary
tags
values"T
summary"
Ttype:
2	
V
HistogramSummary
tag
values"T
summary"
Ttype0:
2	
`
TensorSummaryV2
tag
tensor"T
serialized_summary_metadata
summary"	
Ttype
8
MergeSummary
inputs*N
summary"
Nint(0
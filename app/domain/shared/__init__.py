"""What the web features share: the decision advisor they call, the request and answer shapes, the spreadsheet
layout, the sentences of the insights and the road from a computation to its answer."""

"""The training plan feature: how long a training run takes and what it costs per option, on one GPU model or
ranked across them, as JSON, a chart or a spreadsheet."""

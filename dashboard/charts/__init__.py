"""Chart builders: pure functions from DataFrames to Plotly figures, one module per page."""

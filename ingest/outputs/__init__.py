"""What ToolLens writes for people and tools: lint output, reports, compare, pairs exports."""

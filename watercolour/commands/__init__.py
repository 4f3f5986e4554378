"""The `watercolour` console script's subcommands, one module each; `watercolour.cli` dispatches to them."""

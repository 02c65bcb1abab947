"""The `killpoint` command: one module per subcommand, sharing the output and exit statuses."""

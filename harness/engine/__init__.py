"""Running a campaign: the option model, planning, the engine that runs one cell, the cell's run from start to verdict, and the adapter check."""

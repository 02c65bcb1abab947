"""The forkserver's own modules, preloaded in order before it forks any worker."""

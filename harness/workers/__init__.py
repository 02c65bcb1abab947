"""The processes that run a scenario: the worker's entry point, the forkserver that forks workers warm, and the tree kill that ends them."""

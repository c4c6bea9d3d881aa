"""Program synthesis by hierarchical imitation: long-hand addition (PHP, Fox et al. 2018)."""

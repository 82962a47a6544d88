"""Live runs (`epochsim serve`): the simulated cluster paced by the wall clock behind loopback
listeners, real client processes against it, and what they saw judged (docs/real-clients.md,
Mode B)."""

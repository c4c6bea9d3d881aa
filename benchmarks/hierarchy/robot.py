"""Hierarchical imitation vs flat cloning on the pybullet Panda tasks, and skill reuse."""

from rlsuite.bench import Benchmark, Row, Value, here

# fmt: off
BENCHMARK = Benchmark(script="hierarchy_robot.py", quick=dict(quick=True, tasks="pick_place", no_flat=True, episodes=5), rows=(
    *(
        Row("hierarchy", f"robot {task}, weak (EM), 20 demos", "success, 100 episodes", file,
            Value(("rows", {"demos": 20}, "success", "hierarchical-weak")),
            here("the scripted expert", "expert", "success"),
            f"rlsuite bench run hierarchy_robot --tasks {task} --no-flat", "trained in the run (not saved)", fmt="{:.0%}")
        for task, file in (
            ("pick_place", "hierarchy_robot.json"),
            ("sort", "hierarchy_robot_sort.json"),
            ("tower", "hierarchy_robot_tower.json"),
            ("clear_then_place", "hierarchy_robot_clear_then_place.json"),
        )
    ),
))
# fmt: on

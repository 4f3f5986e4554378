"""How runs are launched: the run presets (`presets/*.yaml`, read by `deployments.presets`), accelerate configs."""

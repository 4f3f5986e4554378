"""How runs are launched: the run presets (`presets/*.yaml`, read by `deployments.presets`) and the accelerate configs."""

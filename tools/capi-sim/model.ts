// Pure: the slice of upstream Cluster API's model the simulator plays that a preview needs (when an owner's machine is
// out of date, what Cluster API compares for an in-place update), for `inplace preview` of a KubeadmControlPlane or
// MachineDeployment change: one model, so the preview and the simulated cluster cannot disagree. No simulator I/O.
export { findNewMachineSet, kcpMachineUpToDate, kubeadmConfigSpecForDiff, machineTemplateUpToDate } from './rollout.js';
export { machineSpecForDiff } from './inplace.js';

package main

import (
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	spec "github.com/NVIDIA/k8s-device-plugin/api/config/v1"
	cli "github.com/urfave/cli/v2"
)

// Node is one node of a pool: its GPUs, the MIG layout mig-parted applies to each (nil: MIG
// off; an empty map: MIG on without instances) and the device plugin's inputs on it (nil: no
// NVIDIA device plugin runs there).
type Node struct {
	Key    string           `json:"key"`
	GPU    GPU              `json:"gpu"`
	Count  int              `json:"count"`
	MIG    []map[string]int `json:"mig"`
	Plugin *Plugin          `json:"plugin"`
}

// Plugin is what the GPU Operator gives the device plugin on a node.
type Plugin struct {
	// The entries of the plugin's ConfigMap; nil when the ClusterPolicy names no ConfigMap (then
	// the operator removes the config manager and the plugin runs on its flags alone).
	Configs       map[string]string `json:"configs"`
	Label         string            `json:"label"`         // the node's nvidia.com/device-plugin.config
	DefaultConfig string            `json:"defaultConfig"` // the config manager's DEFAULT_CONFIG
	Env           map[string]string `json:"env"`           // the plugin container's environment
}

// Result is what the node ends up with.
type Result struct {
	Key                        string         `json:"key"`
	Source                     string         `json:"source"`
	MIGState                   string         `json:"migState,omitempty"` // mig-parted's outcome: success | failed
	MIGDetail                  string         `json:"migDetail,omitempty"`
	MIGDevices                 map[string]int `json:"migDevices,omitempty"`
	Config                     string         `json:"config"` // the config file the config manager chose
	Error                      string         `json:"error,omitempty"`
	MigStrategy                string         `json:"migStrategy,omitempty"`
	Sharing                    string         `json:"sharing,omitempty"`
	RenameByDefault            bool           `json:"renameByDefault,omitempty"`
	FailRequestsGreaterThanOne bool           `json:"failRequestsGreaterThanOne,omitempty"`
	Replicas                   map[string]int `json:"replicas,omitempty"`
	Warnings                   []string       `json:"warnings,omitempty"`
	Resources                  map[string]int `json:"resources"`
}

func registerAll(nodes []Node) []Result {
	results := []Result{}
	for _, n := range nodes {
		r := Result{Key: n.Key, Resources: map[string]int{}}
		if err := register(n, &r); err != nil {
			r.Error = err.Error()
		}
		results = append(results, r)
	}
	return results
}

func register(n Node, r *Result) error {
	m, err := newMachine(n.GPU, n.Count)
	if err != nil {
		return err
	}
	r.Source = m.source
	if n.MIG != nil {
		r.MIGDevices = map[string]int{}
		for i := 0; i < n.Count && i < len(n.MIG); i++ {
			if n.MIG[i] == nil {
				continue
			}
			if err := m.applyMIG(i, n.MIG[i], r.MIGDevices); err != nil {
				// mig-manager marks the node failed; no plugin is restarted onto a half-made layout
				r.MIGState, r.MIGDetail = "failed", fmt.Sprintf("GPU %d: %v", i, err)
				return nil
			}
		}
		r.MIGState = "success"
	}
	if n.Plugin == nil {
		return nil
	}
	return runPlugin(m, *n.Plugin, r)
}

// applyMIG creates the layout's GPU instances on GPU i, placing them as NVML allows: each
// profile at most its instance count, each instance at one of its possible placements, none
// overlapping another in the GPU's memory slices.
func (m *machine) applyMIG(i int, layout map[string]int, devices map[string]int) error {
	d := m.server.Devices[i].(*server.Device)
	if _, ret := d.SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		return fmt.Errorf("enabling MIG mode: %v", ret)
	}
	profiles, err := m.giProfiles(i)
	if err != nil {
		return err
	}
	byName := map[string]giProfile{}
	var known []string
	for _, p := range profiles {
		byName[p.name] = p
		known = append(known, p.name)
	}
	names := make([]string, 0, len(layout))
	for name := range layout {
		names = append(names, name)
	}
	sort.Strings(names)
	var wanted []giProfile
	for _, name := range names {
		p, ok := byName[name]
		if !ok {
			return fmt.Errorf("%s is not a MIG profile of %s (it has %s)", name, d.Config.Name, strings.Join(known, ", "))
		}
		if layout[name] > int(p.info.InstanceCount) {
			return fmt.Errorf("%d x %s: at most %d fit on %s", layout[name], name, p.info.InstanceCount, d.Config.Name)
		}
		for j := 0; j < layout[name]; j++ {
			wanted = append(wanted, p)
		}
	}
	options := make([][]nvml.GpuInstancePlacement, len(wanted))
	for j, p := range wanted {
		info := p.info
		possible, ret := d.GetGpuInstancePossiblePlacements(&info)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("placements of %s: %v", p.name, ret)
		}
		options[j] = possible
	}
	// Large and constrained instances first keeps the search shallow.
	order := make([]int, len(wanted))
	for j := range order {
		order[j] = j
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, pb := wanted[order[a]], wanted[order[b]]
		if pa.info.MemorySizeMB != pb.info.MemorySizeMB {
			return pa.info.MemorySizeMB > pb.info.MemorySizeMB
		}
		return len(options[order[a]]) < len(options[order[b]])
	})
	chosen := make([]nvml.GpuInstancePlacement, len(wanted))
	if !place(order, options, chosen, 0, 0) {
		var parts []string
		for _, name := range names {
			parts = append(parts, fmt.Sprintf("%d x %s", layout[name], name))
		}
		return fmt.Errorf("no placement of %s fits in the memory slices of %s", strings.Join(parts, " + "), d.Config.Name)
	}
	for j, p := range wanted {
		info := p.info
		if _, ret := d.CreateGpuInstanceWithPlacement(&info, &chosen[j]); ret != nvml.SUCCESS {
			return fmt.Errorf("creating %s: %v", p.name, ret)
		}
	}
	for _, p := range profiles {
		info := p.info
		instances, ret := d.GetGpuInstances(&info)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("listing %s: %v", p.name, ret)
		}
		if len(instances) > 0 {
			devices[p.name] += len(instances)
		}
	}
	return nil
}

func place(order []int, options [][]nvml.GpuInstancePlacement, chosen []nvml.GpuInstancePlacement, k int, used uint32) bool {
	if k == len(order) {
		return true
	}
	j := order[k]
	for _, p := range options[j] {
		mask := uint32((1<<p.Size)-1) << p.Start
		if p.Start+p.Size > 8 || used&mask != 0 {
			continue
		}
		chosen[j] = p
		if place(order, options, chosen, k+1, used|mask) {
			return true
		}
	}
	return false
}

// selectConfig is the config manager's choice (cmd/config-manager updateConfigName): the node's
// label if set, else DEFAULT_CONFIG, else the operator's fallback, an empty config.
func selectConfig(p Plugin) (string, error) {
	if len(p.Configs) == 0 {
		return "", fmt.Errorf("config manager: no configuration files available")
	}
	if p.Label != "" {
		if _, ok := p.Configs[p.Label]; !ok {
			return "", fmt.Errorf("config manager: specified config %v does not exist", p.Label)
		}
		return p.Label, nil
	}
	if p.DefaultConfig != "" {
		if _, ok := p.Configs[p.DefaultConfig]; !ok {
			return "", fmt.Errorf("config manager: specified config %v does not exist", p.DefaultConfig)
		}
		return p.DefaultConfig, nil
	}
	return "", nil // FALLBACK_STRATEGIES=empty
}

// pluginFlags are the device plugin's flags (cmd/nvidia-device-plugin/main.go at v0.17.4) that
// api/config/v1 reads, with their defaults and environment variables.
func pluginFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "mig-strategy", Value: spec.MigStrategyNone, EnvVars: []string{"MIG_STRATEGY"}},
		&cli.BoolFlag{Name: "fail-on-init-error", Value: true, EnvVars: []string{"FAIL_ON_INIT_ERROR"}},
		&cli.StringFlag{Name: "driver-root", Aliases: []string{"nvidia-driver-root"}, Value: "/", EnvVars: []string{"NVIDIA_DRIVER_ROOT"}},
		&cli.StringFlag{Name: "dev-root", Aliases: []string{"nvidia-dev-root"}, EnvVars: []string{"NVIDIA_DEV_ROOT"}},
		&cli.BoolFlag{Name: "pass-device-specs", EnvVars: []string{"PASS_DEVICE_SPECS"}},
		&cli.StringSliceFlag{Name: "device-list-strategy", Value: cli.NewStringSlice(spec.DeviceListStrategyEnvVar), EnvVars: []string{"DEVICE_LIST_STRATEGY"}},
		&cli.StringFlag{Name: "device-id-strategy", Value: spec.DeviceIDStrategyUUID, EnvVars: []string{"DEVICE_ID_STRATEGY"}},
		&cli.BoolFlag{Name: "gds-enabled", EnvVars: []string{"GDS_ENABLED"}},
		&cli.BoolFlag{Name: "mofed-enabled", EnvVars: []string{"MOFED_ENABLED"}},
		&cli.StringFlag{Name: "config-file", EnvVars: []string{"CONFIG_FILE"}},
		&cli.StringFlag{Name: "cdi-annotation-prefix", Value: spec.DefaultCDIAnnotationPrefix, EnvVars: []string{"CDI_ANNOTATION_PREFIX"}},
		&cli.StringFlag{Name: "nvidia-cdi-hook-path", Aliases: []string{"nvidia-ctk-path"}, Value: spec.DefaultNvidiaCTKPath, EnvVars: []string{"NVIDIA_CDI_HOOK_PATH", "NVIDIA_CTK_PATH"}},
		&cli.StringFlag{Name: "driver-root-ctr-path", Aliases: []string{"container-driver-root"}, Value: spec.DefaultContainerDriverRoot, EnvVars: []string{"DRIVER_ROOT_CTR_PATH", "CONTAINER_DRIVER_ROOT"}},
		&cli.StringFlag{Name: "mps-root", EnvVars: []string{"MPS_ROOT"}},
		&cli.StringFlag{Name: "device-discovery-strategy", Value: "auto", EnvVars: []string{"DEVICE_DISCOVERY_STRATEGY"}},
		&cli.IntSliceFlag{Name: "imex-channel-ids", EnvVars: []string{"IMEX_CHANNEL_IDS"}},
		&cli.BoolFlag{Name: "imex-required", EnvVars: []string{"IMEX_REQUIRED"}},
	}
}

// loadConfig runs the plugin's config loading (spec.NewConfig) with its flags and environment.
func loadConfig(p Plugin, r *Result) (*spec.Config, error) {
	args := []string{"nvidia-device-plugin"}
	if p.Configs != nil {
		name, err := selectConfig(p)
		if err != nil {
			return nil, err // the config manager's init container fails: the plugin never starts
		}
		r.Config = name
		file, err := os.CreateTemp("", "device-plugin-config-*.yaml")
		if err != nil {
			return nil, err
		}
		defer os.Remove(file.Name())
		if _, err := file.WriteString(p.Configs[name]); err != nil { // "" for the empty config: /dev/null
			return nil, err
		}
		file.Close()
		args = append(args, "--config-file", file.Name())
	}
	flags := pluginFlags()
	for _, f := range flags {
		for _, env := range f.(interface{ GetEnvVars() []string }).GetEnvVars() {
			os.Unsetenv(env)
		}
	}
	for key, value := range p.Env {
		os.Setenv(key, value)
	}
	var config *spec.Config
	var loadErr error
	app := &cli.App{Name: "nvidia-device-plugin", Flags: flags, Action: func(c *cli.Context) error {
		config, loadErr = spec.NewConfig(c, c.App.Flags)
		return nil
	}}
	if err := app.Run(args); err != nil {
		return nil, err
	}
	if loadErr != nil {
		return nil, fmt.Errorf("unable to load config: unable to finalize config: %v", loadErr)
	}
	config.Flags.GFD = nil
	return config, nil
}

type warnings struct{ into *[]string }

func (w warnings) Warning(args ...interface{}) { *w.into = append(*w.into, fmt.Sprint(args...)) }
func (w warnings) Warningf(format string, args ...interface{}) {
	*w.into = append(*w.into, fmt.Sprintf(format, args...))
}

// validate is the plugin's validateFlags (cmd/nvidia-device-plugin/main.go), on a node with NVML.
func validate(config *spec.Config) error {
	if _, err := spec.NewDeviceListStrategies(*config.Flags.Plugin.DeviceListStrategy); err != nil {
		return fmt.Errorf("invalid --device-list-strategy option: %v", err)
	}
	if id := *config.Flags.Plugin.DeviceIDStrategy; id != spec.DeviceIDStrategyUUID && id != spec.DeviceIDStrategyIndex {
		return fmt.Errorf("invalid --device-id-strategy option: %v", id)
	}
	if config.Sharing.SharingStrategy() == spec.SharingStrategyMPS {
		if *config.Flags.MigStrategy == spec.MigStrategyMixed {
			return fmt.Errorf("using --mig-strategy=mixed is not supported with MPS")
		}
		if config.Flags.MpsRoot == nil || *config.Flags.MpsRoot == "" {
			return fmt.Errorf("using MPS requires --mps-root to be specified")
		}
	}
	switch *config.Flags.DeviceDiscoveryStrategy {
	case "auto", "nvml", "tegra":
	default:
		return fmt.Errorf("invalid --device-discovery-strategy option %v", *config.Flags.DeviceDiscoveryStrategy)
	}
	switch *config.Flags.MigStrategy {
	case spec.MigStrategyNone, spec.MigStrategySingle, spec.MigStrategyMixed:
	default:
		return fmt.Errorf("unknown MIG strategy: %v", *config.Flags.MigStrategy)
	}
	if err := spec.AssertChannelIDsValid(config.Imex.ChannelIDs); err != nil {
		return fmt.Errorf("invalid IMEX channel IDs: %w", err)
	}
	return nil
}

func runPlugin(m *machine, p Plugin, r *Result) error {
	config, err := loadConfig(p, r)
	if err != nil {
		return err
	}
	spec.DisableResourceNamingInConfig(warnings{&r.Warnings}, config)
	r.MigStrategy = *config.Flags.MigStrategy
	r.Sharing = string(config.Sharing.SharingStrategy())
	if shared := config.Sharing.ReplicatedResources(); shared != nil {
		r.RenameByDefault = shared.RenameByDefault
		r.FailRequestsGreaterThanOne = shared.FailRequestsGreaterThanOne
		r.Replicas = map[string]int{}
		for _, resource := range shared.Resources {
			r.Replicas[string(resource.Name)] = resource.Replicas
		}
	}
	if err := validate(config); err != nil {
		return fmt.Errorf("unable to validate flags: %v", err)
	}
	if err := addDefaultResources(m.devices, config); err != nil {
		return fmt.Errorf("unable to add default resources to config: %v", err)
	}
	devices, err := m.deviceMap(config, r)
	if err != nil {
		return fmt.Errorf("error building device map from config.resources: %v", err)
	}
	if config.Sharing.SharingStrategy() == spec.SharingStrategyMPS {
		for _, ids := range devices {
			for _, id := range ids {
				if strings.HasPrefix(id, "mig-") {
					return fmt.Errorf("sharing using MPS is not supported for MIG devices")
				}
			}
		}
	}
	counts, err := replicate(config.Sharing.ReplicatedResources(), devices)
	if err != nil {
		return fmt.Errorf("error updating device map with replicas from replicatedResources config: %v", err)
	}
	r.Resources = counts
	return nil
}

// addDefaultResources is internal/rm AddDefaultResourcesToConfig: every GPU as nvidia.com/gpu,
// and per the MIG strategy every MIG device as nvidia.com/gpu (single) or one resource per
// profile of the node's GPUs (mixed).
func addDefaultResources(devices device.Interface, config *spec.Config) error {
	_ = config.Resources.AddGPUResource("*", "gpu")
	switch *config.Flags.MigStrategy {
	case spec.MigStrategySingle:
		return config.Resources.AddMIGResource("*", "gpu")
	case spec.MigStrategyMixed:
		return devices.VisitMigProfiles(func(p device.MigProfile) error {
			info := p.GetInfo()
			if info.C != info.G {
				return nil
			}
			return config.Resources.AddMIGResource(p.String(), strings.ReplaceAll("mig-"+p.String(), "+", "."))
		})
	}
	return nil
}

// deviceMap is internal/rm's device map: each device under the first resource whose pattern
// matches its name (GPUs) or profile (MIG devices), as device IDs by resource name.
func (m *machine) deviceMap(config *spec.Config, r *Result) (map[string][]string, error) {
	strategy := *config.Flags.MigStrategy
	gpuMap := map[string][]string{}
	migMap := map[string][]string{}
	var migProfiles []string
	for i, handle := range m.server.Devices {
		d := handle.(*server.Device)
		migEnabled := d.MigMode == nvml.DEVICE_MIG_ENABLE
		if migEnabled && strategy != spec.MigStrategyNone {
			profiles, err := m.giProfiles(i)
			if err != nil {
				return nil, err
			}
			count := 0
			for _, p := range profiles {
				info := p.info
				instances, _ := d.GetGpuInstances(&info)
				for j := range instances {
					matched := false
					for _, resource := range config.Resources.MIGs {
						if resource.Pattern.Matches(p.name) {
							migMap[string(resource.Name)] = append(migMap[string(resource.Name)], fmt.Sprintf("mig-%d-%s-%d", i, p.name, j))
							migProfiles = append(migProfiles, p.name)
							matched = true
							break
						}
					}
					if !matched {
						return nil, fmt.Errorf("error building MIG device map: MIG profile '%v' does not match any resource patterns", p.name)
					}
					count++
				}
			}
			if count == 0 {
				if strategy == spec.MigStrategySingle {
					return nil, fmt.Errorf("invalid MIG configuration: at least one device with migEnabled=true was not configured correctly: device %v has no MIG devices configured", i)
				}
				r.Warnings = append(r.Warnings, fmt.Sprintf("device %v has no MIG devices configured", i))
			}
			continue
		}
		name, _ := d.GetName()
		matched := false
		for _, resource := range config.Resources.GPUs {
			if resource.Pattern.Matches(name) {
				gpuMap[string(resource.Name)] = append(gpuMap[string(resource.Name)], fmt.Sprintf("gpu-%d", i))
				matched = true
				break
			}
		}
		if !matched {
			return nil, fmt.Errorf("error building GPU device map: GPU name '%v' does not match any resource patterns", name)
		}
	}
	if strategy == spec.MigStrategySingle {
		for _, p := range migProfiles {
			if p != migProfiles[0] {
				return nil, fmt.Errorf("invalid MIG configuration: more than one MIG device type present on node")
			}
		}
		if len(gpuMap) > 0 && len(migMap) > 0 {
			return nil, fmt.Errorf("all devices on the node must be configured with the same migEnabled value")
		}
	}
	for name, ids := range migMap {
		gpuMap[name] = append(gpuMap[name], ids...)
	}
	return gpuMap, nil
}

// replicate is internal/rm updateDeviceMapWithReplicas, counting devices per resource name:
// each replicated device becomes `replicas` devices, under its rename when one is set.
func replicate(shared *spec.ReplicatedResources, devices map[string][]string) (map[string]int, error) {
	named := map[string]bool{}
	for _, resource := range shared.Resources {
		named[string(resource.Name)] = true
	}
	counts := map[string]int{}
	for name, ids := range devices {
		if !named[name] {
			counts[name] += len(ids)
		}
	}
	for _, resource := range shared.Resources {
		ids := devices[string(resource.Name)]
		replicated := len(ids)
		switch {
		case resource.Devices.All:
		case resource.Devices.Count > 0:
			if resource.Devices.Count > len(ids) {
				return nil, fmt.Errorf("unable to get IDs of devices to replicate for '%v' resource: requested %d devices to be replicated, but only %d devices available",
					resource.Name, resource.Devices.Count, len(ids))
			}
			replicated = resource.Devices.Count
		default:
			replicated = len(resource.Devices.List)
		}
		if replicated == 0 {
			continue
		}
		counts[string(resource.Name)] += len(ids) - replicated
		name := resource.Name
		if resource.Rename != "" {
			name = resource.Rename
		}
		counts[string(name)] += replicated * resource.Replicas
	}
	for name, n := range counts {
		if n == 0 {
			delete(counts, name)
		}
	}
	return counts, nil
}

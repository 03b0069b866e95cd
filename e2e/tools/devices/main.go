// What NVIDIA's device plugin registers on a node, from the configuration the platform emits.
//
// The device plugin's own main cannot run here (no GPU, no kubelet), and its resource manager
// is an internal package. So this main drives the parts upstream publishes: the config package
// (api/config/v1) parses and validates the emitted config file with the plugin's own flags and
// environment, names resources and applies replicas / renameByDefault; NVML is go-nvml's mock
// server, whose GPU tables (A100, H100) give the profiles, counts and placements where a table
// for the node's GPU exists (the catalog's facts otherwise); go-nvlib names the MIG profiles as
// the plugin sees them. What remains is ours and mirrors the plugin's main and internal/rm at
// v0.17.4: the config-manager's choice of config, validateFlags, AddDefaultResourcesToConfig
// and the device map (which device each resource pattern claims, then replicas).
//
//	devices describe < {"gpus": [GPU]}            the facts of each GPU as NVML reports them
//	devices register < {"nodes": [Node]}          what the plugin registers on each node
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvlib/pkg/nvlib/device"
	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// Profile is a MIG profile as the catalog states it (used only without an upstream table).
type Profile struct {
	Name            string `json:"name"`
	ComputeSlices   int    `json:"computeSlices"`
	MemorySlices    int    `json:"memorySlices"`
	MaxCount        int    `json:"maxCount"`
	Placements      []int  `json:"placements"`
	MediaExtensions bool   `json:"mediaExtensions"`
}

// GPU is a GPU model as the catalog states it.
type GPU struct {
	Model        string    `json:"model"`
	PciDeviceIDs []string  `json:"pciDeviceIds"`
	MemoryMiB    uint64    `json:"memoryMiB"`
	Profiles     []Profile `json:"profiles"`
}

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: devices describe|register < request.json"))
	}
	var out any
	var err error
	switch os.Args[1] {
	case "describe":
		var req struct {
			GPUs []GPU `json:"gpus"`
		}
		if err = json.NewDecoder(os.Stdin).Decode(&req); err == nil {
			out, err = describeAll(req.GPUs)
		}
	case "register":
		var req struct {
			Nodes []Node `json:"nodes"`
		}
		if err = json.NewDecoder(os.Stdin).Decode(&req); err == nil {
			out = registerAll(req.Nodes)
		}
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fail(err)
	}
	encoder := json.NewEncoder(os.Stdout)
	encoder.SetIndent("", "  ")
	if err := encoder.Encode(out); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "devices:", err)
	os.Exit(2)
}

// upstreamTables are go-nvml's mock GPUs whose tables agree with NVML's geometry (7 compute and
// 8 memory slices, placement sizes in memory slices). The H100/H200/B200 tables in the same
// package give 3g placements a size of 3 and 7g one of 7, which no real GPU reports, and the
// H200 and B200 tables carry PCI IDs of other boards, so those models use the catalog's facts.
var upstreamTables = map[string]gpus.Config{
	"gpus.A100_SXM4_40GB": gpus.A100_SXM4_40GB,
	"gpus.A100_SXM4_80GB": gpus.A100_SXM4_80GB,
	"gpus.A100_PCIE_40GB": gpus.A100_PCIE_40GB,
	"gpus.A100_PCIE_80GB": gpus.A100_PCIE_80GB,
	"gpus.H100_SXM5_80GB": gpus.H100_SXM5_80GB,
}

// gpuConfig is the NVML mock GPU for a catalog model: upstream's table when one has one of the
// model's PCI device IDs, else one built from the catalog. The second value names the source.
func gpuConfig(g GPU) (gpus.Config, string, error) {
	names := make([]string, 0, len(upstreamTables))
	for name := range upstreamTables {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, id := range g.PciDeviceIDs {
		want, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(id), "0x"), 16, 32)
		if err != nil {
			return gpus.Config{}, "", fmt.Errorf("%s: PCI device ID %q: %v", g.Model, id, err)
		}
		for _, name := range names {
			if table := upstreamTables[name]; uint64(table.PciDeviceId) == want {
				if g.Model == "H100-SXM-80GB" {
					return fixH100(table), "go-nvml mock " + name + " (placement sizes from its memory sizes)", nil
				}
				return table, "go-nvml mock " + name, nil
			}
		}
	}
	return catalogConfig(g), "gpuplat catalog", nil
}

// fixH100 keeps the H100 table's profiles, counts and placement starts, with each placement's
// size in memory slices as NVML reports it (the table's 3g and 7g sizes are compute slices).
func fixH100(table gpus.Config) gpus.Config {
	fixed := table
	fixed.MIGProfiles.GpuInstancePlacements = map[int][]nvml.GpuInstancePlacement{}
	for id, placements := range table.MIGProfiles.GpuInstancePlacements {
		info := table.MIGProfiles.GpuInstanceProfiles[id]
		size := memorySlices(info.MemorySizeMB, table.MemoryMB)
		var sized []nvml.GpuInstancePlacement
		for _, p := range placements {
			if p.Start+uint32(size) <= 8 {
				sized = append(sized, nvml.GpuInstancePlacement{Start: p.Start, Size: uint32(size)})
			}
		}
		fixed.MIGProfiles.GpuInstancePlacements[id] = sized
	}
	return fixed
}

func memorySlices(profileMB, totalMB uint64) int {
	return int((profileMB*8 + totalMB - 1) / totalMB)
}

// catalogConfig builds NVML's view of a GPU from the catalog: GPU instance profiles by their
// NVML IDs, with memory sizes that make go-nvlib name them as the catalog does.
func catalogConfig(g GPU) gpus.Config {
	total := g.MemoryMiB
	for _, p := range g.Profiles {
		if p.MemorySlices == 8 { // the whole GPU: its name carries the memory NVML reports
			total = uint64(memoryGiB(p.Name)) * 1024
		}
	}
	config := gpus.Config{Name: g.Model, Architecture: nvml.DEVICE_ARCH_HOPPER, Brand: nvml.BRAND_NVIDIA,
		MemoryMB: total}
	if len(g.PciDeviceIDs) > 0 {
		id, _ := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(g.PciDeviceIDs[0]), "0x"), 16, 32)
		config.PciDeviceId = uint32(id)
	}
	if len(g.Profiles) == 0 {
		return config
	}
	profiles := map[int]nvml.GpuInstanceProfileInfo{}
	placements := map[int][]nvml.GpuInstancePlacement{}
	for _, p := range g.Profiles {
		id := giProfileID(p)
		profiles[id] = nvml.GpuInstanceProfileInfo{Id: uint32(id), SliceCount: uint32(p.ComputeSlices),
			InstanceCount: uint32(p.MaxCount), MemorySizeMB: total * uint64(p.MemorySlices) / 8}
		for _, start := range p.Placements {
			placements[id] = append(placements[id], nvml.GpuInstancePlacement{Start: uint32(start), Size: uint32(p.MemorySlices)})
		}
	}
	config.MIGProfiles = gpus.MIGProfileConfig{GpuInstanceProfiles: profiles, GpuInstancePlacements: placements}
	return config
}

func memoryGiB(profile string) int {
	rest := profile[strings.Index(profile, ".")+1:]
	n, _ := strconv.Atoi(strings.TrimSuffix(strings.SplitN(rest, "+", 2)[0], "gb"))
	return n
}

func giProfileID(p Profile) int {
	switch {
	case p.ComputeSlices == 1 && p.MediaExtensions:
		return nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV1
	case p.ComputeSlices == 1 && p.MemorySlices == 2:
		return nvml.GPU_INSTANCE_PROFILE_1_SLICE_REV2
	case p.ComputeSlices == 1:
		return nvml.GPU_INSTANCE_PROFILE_1_SLICE
	case p.ComputeSlices == 2:
		return nvml.GPU_INSTANCE_PROFILE_2_SLICE
	case p.ComputeSlices == 3:
		return nvml.GPU_INSTANCE_PROFILE_3_SLICE
	case p.ComputeSlices == 4:
		return nvml.GPU_INSTANCE_PROFILE_4_SLICE
	case p.ComputeSlices == 6:
		return nvml.GPU_INSTANCE_PROFILE_6_SLICE
	default:
		return nvml.GPU_INSTANCE_PROFILE_7_SLICE
	}
}

// machine is a node's GPUs as NVML (go-nvml's mock) and go-nvlib see them.
type machine struct {
	server  *server.Server
	devices device.Interface
	source  string
}

func newMachine(g GPU, count int) (*machine, error) {
	config, source, err := gpuConfig(g)
	if err != nil {
		return nil, err
	}
	s, err := server.New(server.WithGPUs(gpus.Multiple(count, config)...), server.WithDriverVersion("580.82.07"),
		server.WithNVMLVersion("13.580.82.07"), server.WithCUDADriverVersion(13000))
	if err != nil {
		return nil, err
	}
	return &machine{server: s, devices: device.New(s), source: source}, nil
}

// giProfile is one GPU instance profile as go-nvlib names it.
type giProfile struct {
	name string
	info nvml.GpuInstanceProfileInfo
}

// giProfiles are the GPU instance profiles of GPU i: go-nvlib's profiles whose compute instance
// spans the whole GPU instance (C == G, shared engines), which are what mig-parted creates and
// what the plugin's mixed strategy names.
func (m *machine) giProfiles(i int) ([]giProfile, error) {
	d, err := m.devices.NewDevice(m.server.Devices[i])
	if err != nil {
		return nil, err
	}
	var found []giProfile
	seen := map[string]bool{}
	err = d.VisitMigProfiles(func(p device.MigProfile) error {
		info := p.GetInfo()
		if info.C != info.G || info.CIEngProfileID != nvml.COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED || seen[p.String()] {
			return nil
		}
		seen[p.String()] = true
		gi, ret := m.server.Devices[i].GetGpuInstanceProfileInfo(info.GIProfileID)
		if ret != nvml.SUCCESS {
			return fmt.Errorf("GPU instance profile %d: %v", info.GIProfileID, ret)
		}
		found = append(found, giProfile{name: p.String(), info: gi})
		return nil
	})
	return found, err
}

// Facts are what describe prints for one GPU model.
type Facts struct {
	Model       string        `json:"model"`
	Source      string        `json:"source"`
	Name        string        `json:"name"`
	PciDeviceID string        `json:"pciDeviceId"`
	Profiles    []ProfileFact `json:"profiles"`
}

// ProfileFact is one MIG profile of a GPU, named as go-nvlib names it.
type ProfileFact struct {
	Name      string `json:"name"`
	Instances int    `json:"instances"`
	Slices    int    `json:"slices"`
}

func describeAll(models []GPU) ([]Facts, error) {
	var all []Facts
	for _, g := range models {
		m, err := newMachine(g, 1)
		if err != nil {
			return nil, err
		}
		profiles, err := m.giProfiles(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %v", g.Model, err)
		}
		d := m.server.Devices[0].(*server.Device)
		facts := Facts{Model: g.Model, Source: m.source, Name: d.Config.Name,
			PciDeviceID: fmt.Sprintf("0x%08X", d.Config.PciDeviceId), Profiles: []ProfileFact{}}
		for _, p := range profiles {
			facts.Profiles = append(facts.Profiles, ProfileFact{Name: p.name, Instances: int(p.info.InstanceCount),
				Slices: int(p.info.SliceCount)})
		}
		all = append(all, facts)
	}
	return all, nil
}

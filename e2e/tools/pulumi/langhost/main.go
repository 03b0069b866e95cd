// A Python language host for the Pulumi CLI, built as pulumi-language-python.
//
// Upstream's host is its own module (sdk/python/cmd/pulumi-language-python/v3), which the module
// proxy serves at no version, so it cannot be built from its module here. This one speaks the same
// LanguageRuntime protocol for what the e2e suite runs: a program (`pulumi up/preview/destroy`,
// through the exec shim the SDK module ships) and a policy pack (`--policy-pack`). It takes the
// virtualenv from the project's runtime options through the SDK's own toolchain package, as
// upstream's does. Installing dependencies, code generation and packing are left unimplemented:
// the suite's virtualenv is built by `make`, and a call for them fails loudly.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/emptypb"

	sdk "github.com/pulumi/pulumi/sdk/v3"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/cmdutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	"github.com/pulumi/pulumi/sdk/v3/go/common/version"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"github.com/pulumi/pulumi/sdk/v3/python/toolchain"
)

// The SDK's exec shim exits with this code after it has shown the user an actionable message.
const exitAfterUserMessage = 32

type host struct {
	pulumirpc.UnimplementedLanguageRuntimeServer
	execShim      string
	engineAddress string
}

func main() {
	tracing := flag.String("tracing", "", "accepted for the CLI's sake; tracing is not emitted")
	showVersion := flag.Bool("version", false, "print the version and exit")
	flag.Parse()
	_ = tracing
	if *showVersion {
		fmt.Println(version.Version)
		return
	}
	self, err := os.Executable()
	if err != nil {
		cmdutil.Exit(err)
	}
	shim := filepath.Join(filepath.Dir(self), "pulumi-language-python-exec")
	if _, err := os.Stat(shim); err != nil {
		cmdutil.Exit(fmt.Errorf("missing the exec shim beside the host: %w", err))
	}
	h := &host{execShim: shim}
	if flag.NArg() > 0 {
		h.engineAddress = flag.Arg(0)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cancel := make(chan bool)
	go func() { <-ctx.Done(); close(cancel) }()
	if h.engineAddress != "" {
		if err := rpcutil.Healthcheck(ctx, h.engineAddress, 5*time.Minute, stop); err != nil {
			cmdutil.Exit(err)
		}
	}
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterLanguageRuntimeServer(srv, h)
			return nil
		},
	})
	if err != nil {
		cmdutil.Exit(err)
	}
	fmt.Printf("%d\n", handle.Port) // the CLI reads the port from our first line
	if err := <-handle.Done; err != nil {
		cmdutil.Exit(err)
	}
}

func pythonOptions(info *pulumirpc.ProgramInfo) (toolchain.PythonOptions, error) {
	opts := toolchain.PythonOptions{Root: info.GetRootDirectory(), ProgramDir: info.GetProgramDirectory()}
	options := info.GetOptions().AsMap()
	if venv, ok := options["virtualenv"]; ok {
		name, ok := venv.(string)
		if !ok {
			return opts, errors.New("runtime option virtualenv must be a string")
		}
		opts.Virtualenv = name
	}
	if tc, ok := options["toolchain"]; ok && tc != "pip" {
		return opts, fmt.Errorf("runtime option toolchain %v: only pip is supported here", tc)
	}
	opts.Toolchain = toolchain.Pip
	return opts, nil
}

func (h *host) Handshake(ctx context.Context, req *pulumirpc.LanguageHandshakeRequest,
) (*pulumirpc.LanguageHandshakeResponse, error) {
	h.engineAddress = req.GetEngineAddress()
	return &pulumirpc.LanguageHandshakeResponse{}, nil
}

func (h *host) GetPluginInfo(context.Context, *emptypb.Empty) (*pulumirpc.PluginInfo, error) {
	return &pulumirpc.PluginInfo{Version: version.Version}, nil
}

// The suite installs the provider plugins it needs itself, and the CLI must not fetch any.
func (h *host) GetRequiredPlugins(context.Context, *pulumirpc.GetRequiredPluginsRequest,
) (*pulumirpc.GetRequiredPluginsResponse, error) {
	return &pulumirpc.GetRequiredPluginsResponse{}, nil
}

func (h *host) GetRequiredPackages(context.Context, *pulumirpc.GetRequiredPackagesRequest,
) (*pulumirpc.GetRequiredPackagesResponse, error) {
	return &pulumirpc.GetRequiredPackagesResponse{}, nil
}

func (h *host) GetProgramDependencies(context.Context, *pulumirpc.GetProgramDependenciesRequest,
) (*pulumirpc.GetProgramDependenciesResponse, error) {
	return &pulumirpc.GetProgramDependenciesResponse{}, nil
}

func (h *host) About(ctx context.Context, req *pulumirpc.AboutRequest) (*pulumirpc.AboutResponse, error) {
	opts, err := pythonOptions(req.GetInfo())
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	info, err := tc.About(ctx)
	if err != nil {
		return nil, err
	}
	return &pulumirpc.AboutResponse{Executable: info.PythonExecutable, Version: info.PythonVersion.String()}, nil
}

// Run starts the program through the SDK's exec shim, with the arguments and configuration
// environment the shim reads.
func (h *host) Run(ctx context.Context, req *pulumirpc.RunRequest) (*pulumirpc.RunResponse, error) {
	opts, err := pythonOptions(req.GetInfo())
	if err != nil {
		return nil, err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return nil, err
	}
	if err := tc.ValidateVenv(ctx); err != nil {
		return nil, err
	}
	args := []string{h.execShim}
	for _, flagValue := range [][2]string{
		{"monitor", req.GetMonitorAddress()},
		{"engine", h.engineAddress},
		{"project", req.GetProject()},
		{"root_directory", req.GetInfo().GetRootDirectory()},
		{"stack", req.GetStack()},
		{"pwd", req.GetPwd()},
		{"dry_run", strconv.FormatBool(req.GetDryRun())},
		{"parallel", strconv.Itoa(int(req.GetParallel()))},
		{"organization", req.GetOrganization()},
	} {
		if flagValue[1] != "" {
			args = append(args, "--"+flagValue[0], flagValue[1])
		}
	}
	args = append(args, req.GetInfo().GetEntryPoint())
	args = append(args, req.GetArgs()...)

	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return nil, err
	}
	config, err := json.Marshal(req.GetConfig())
	if err != nil {
		return nil, err
	}
	secretKeys, err := json.Marshal(append([]string{}, req.GetConfigSecretKeys()...))
	if err != nil {
		return nil, err
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config), "PULUMI_CONFIG_SECRET_KEYS="+string(secretKeys))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 5 * time.Second

	if err := cmd.Run(); err != nil {
		// Python does not flush on an abnormal exit; the engine reads what it printed from our streams.
		_ = os.Stdout.Sync()
		_ = os.Stderr.Sync()
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if code := exitErr.ExitCode(); code == exitAfterUserMessage {
				return &pulumirpc.RunResponse{Bail: true}, nil
			} else {
				return &pulumirpc.RunResponse{Error: fmt.Sprintf("program exited with non-zero exit code: %d", code)}, nil
			}
		}
		return &pulumirpc.RunResponse{Error: fmt.Sprintf("could not run the program: %v", err)}, nil
	}
	return &pulumirpc.RunResponse{}, nil
}

// RunPlugin runs a Python policy pack (`python -m pulumi.policy <engine> <pack dir>`, in the pack's
// directory), behind the SDK's policy proxy, which hands the pack the stack's configuration as the
// environment pulumi_policy reads. Other Python plugins are not needed by the suite.
func (h *host) RunPlugin(req *pulumirpc.RunPluginRequest, server pulumirpc.LanguageRuntime_RunPluginServer) error {
	if req.GetKind() != string(apitype.AnalyzerPlugin) {
		return fmt.Errorf("plugin kind %q: only policy packs run here", req.GetKind())
	}
	ctx := server.Context()
	opts, err := pythonOptions(req.GetInfo())
	if err != nil {
		return err
	}
	tc, err := toolchain.ResolveToolchain(opts)
	if err != nil {
		return err
	}
	args := append([]string{"-u", "-m", "pulumi.policy"}, req.GetArgs()...)
	args = append(args, req.GetInfo().GetProgramDirectory())
	cmd, err := tc.Command(ctx, args...)
	if err != nil {
		return err
	}
	cmd.Dir = req.GetInfo().GetProgramDirectory()

	closer, stdout, stderr, err := rpcutil.MakeRunPluginStreams(server, false)
	if err != nil {
		return err
	}
	defer closer.Close()
	proxy, stdout, err := sdk.NewPolicyProxy(ctx, stdout)
	if err != nil {
		return fmt.Errorf("policy proxy: %w", err)
	}
	stack, err := proxy.AwaitConfiguration(ctx)
	if err != nil {
		return fmt.Errorf("stack configuration for the policy pack: %w", err)
	}
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	if stack != nil {
		for key, value := range map[string]string{
			"PULUMI_ORGANIZATION": stack.GetOrganization(),
			"PULUMI_PROJECT":      stack.GetProject(),
			"PULUMI_STACK":        stack.GetStack(),
			"PULUMI_DRY_RUN":      strconv.FormatBool(stack.GetDryRun()),
		} {
			if value != "" {
				cmd.Env = append(cmd.Env, key+"="+value)
			}
		}
		if stack.GetConfig() != nil {
			config, err := json.Marshal(stack.GetConfig())
			if err != nil {
				return err
			}
			cmd.Env = append(cmd.Env, "PULUMI_CONFIG="+string(config))
		}
	}
	cmd.Env = append(cmd.Env, req.GetEnv()...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := proxy.Attach(ctx, cmd); err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) {
			if status, ok := exitErr.Sys().(syscall.WaitStatus); ok {
				return server.Send(&pulumirpc.RunPluginResponse{
					Output: &pulumirpc.RunPluginResponse_Exitcode{Exitcode: int32(status.ExitStatus())},
				})
			}
		}
		return fmt.Errorf("policy pack: %w", err)
	}
	return closer.Close()
}

package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpcage/mcpcage/internal/cage"
)

// newStdioLaunchCmd is the cage's entrypoint when its stdio travels over
// named pipes: it opens the session's pipes as stdin and stdout and
// replaces itself with the server's command (cage.LaunchOnPipes). Hidden.
func newStdioLaunchCmd(ios *IOStreams) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:    cage.LaunchCommand + " --dir DIR -- COMMAND [ARG]...",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				return errors.New("--dir is required")
			}
			err := cage.LaunchOnPipes(dir, args)
			fmt.Fprintf(ios.ErrOut, "mcpcage: the server is not run: %v\n", err)
			os.Exit(127)
			return nil
		},
	}
	cmd.Flags().SetInterspersed(false)
	cmd.Flags().StringVar(&dir, "dir", "", "the folder of the session's stdio pipes")
	return cmd
}

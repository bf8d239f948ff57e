package workload

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrNoLoopDisk is returned by StartServerOnLoopDisk where an ext4
// filesystem on a loop device cannot be made (it needs root, a free loop
// device, losetup, mkfs.ext4 and e2fsck).
var ErrNoLoopDisk = errors.New("cannot make an ext4 disk on a loop device (needs root, losetup, mkfs.ext4, e2fsck and fsfreeze)")

// StartServerOnLoopDisk is StartServer with the data directory on an ext4
// filesystem of its own of size bytes: an image file (dir/disk.img) on a
// loop device, mounted errors=remount-ro at dir/disk as production
// filesystems are, which the readonly fault has the kernel make
// read-only and the diskfull fault fills. Close unmounts it and frees the
// device. Where it cannot be made the error wraps ErrNoLoopDisk.
func StartServerOnLoopDisk(name string, bin Binary, dir string, size int64, extra ...string) (*Server, error) {
	for _, tool := range []string{"losetup", "mkfs.ext4", "e2fsck", "fsfreeze"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil, fmt.Errorf("%w: %s is not installed", ErrNoLoopDisk, tool)
		}
	}
	disk := filepath.Join(dir, "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		return nil, err
	}
	img := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(img, nil, 0o644); err != nil {
		return nil, err
	}
	if err := os.Truncate(img, size); err != nil {
		return nil, err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", img).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%w: mkfs.ext4: %v: %s", ErrNoLoopDisk, err, strings.TrimSpace(string(out)))
	}
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("%w: losetup: %v: %s", ErrNoLoopDisk, err, strings.TrimSpace(string(out)))
	}
	loop := strings.TrimSpace(string(out))
	if err := mountLoop(loop, disk); err != nil {
		_ = exec.Command("losetup", "-d", loop).Run()
		return nil, fmt.Errorf("%w: %v", ErrNoLoopDisk, err)
	}
	s, err := startServerAt(name, bin, dir, filepath.Join(disk, "data"), disk, extra)
	if err != nil {
		_ = exec.Command("umount", "-l", disk).Run()
		_ = exec.Command("losetup", "-d", loop).Run()
		return nil, err
	}
	s.loop = loop
	return s, nil
}

// mountLoop mounts the ext4 filesystem on loop at dir, read-only from
// its first error on.
func mountLoop(loop, dir string) error {
	if out, err := exec.Command("mount", "-t", "ext4", "-o", "errors=remount-ro", loop, dir).CombinedOutput(); err != nil {
		return fmt.Errorf("mount %s: %v: %s", loop, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// raiseFSError has the kernel record an error on the ext4 filesystem on
// loop, mounted at dir: it aborts the journal and makes the filesystem
// read-only (errors=remount-ro), as after an I/O error.
//
// The filesystem is frozen meanwhile. An fdatasync in flight when the
// journal aborts can return success though the journal transaction
// holding the file's new size was thrown away by the abort: ext4 on
// Linux 6.18 did so for binlog appends here (a server logged its binlog
// synced to offset N, and after e2fsck the file ended 1,304 bytes
// before N), for about one fault in ten with eight clients committing.
// Freezing first completes every fsync in flight and holds new ones
// back until the error is recorded, so every fsync either finished
// before the error or fails after it.
func raiseFSError(loop, dir string) error {
	if out, err := exec.Command("fsfreeze", "--freeze", dir).CombinedOutput(); err != nil {
		return fmt.Errorf("fsfreeze: %v: %s", err, strings.TrimSpace(string(out)))
	}
	trigger := filepath.Join("/sys/fs/ext4", filepath.Base(loop), "trigger_fs_error")
	err := os.WriteFile(trigger, []byte("lockstep workload: readonly fault\n"), 0o200)
	if out, uerr := exec.Command("fsfreeze", "--unfreeze", dir).CombinedOutput(); uerr != nil && err == nil {
		err = fmt.Errorf("fsfreeze --unfreeze: %v: %s", uerr, strings.TrimSpace(string(out)))
	}
	return err
}

// readOnlyDisk has the kernel make s's ext4 filesystem read-only (ext4's
// trigger_fs_error takes the path of an I/O error), leaves it so for
// hold, then kills s, checks the filesystem, mounts it again and starts
// s: a filesystem made read-only by an error stays so until then.
func (s *Server) readOnlyDisk(ctx context.Context, hold time.Duration) (string, error) {
	if s.loop == "" {
		return "", errors.New("its data directory is not on an ext4 disk of its own (StartServerOnLoopDisk)")
	}
	if err := raiseFSError(s.loop, s.disk); err != nil {
		return "", err
	}
	select {
	case <-ctx.Done():
	case <-time.After(hold):
	}
	if s.Running() {
		if err := s.Kill(); err != nil {
			return "", err
		}
	}
	if out, err := exec.Command("umount", s.disk).CombinedOutput(); err != nil {
		return "", fmt.Errorf("umount: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// e2fsck exits 1 when it corrected something (the error recorded).
	// What it did is kept beside the server's log (e2fsck.log), for a
	// run whose check fails.
	out, err := exec.Command("e2fsck", "-fy", s.loop).CombinedOutput()
	keepCheckLog(filepath.Join(s.dir, "e2fsck.log"), out)
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() > 1 {
			return "", fmt.Errorf("e2fsck: %v: %s", err, strings.TrimSpace(string(out)))
		}
	}
	if err := mountLoop(s.loop, s.disk); err != nil {
		return "", err
	}
	if err := s.Start(); err != nil {
		return "", err
	}
	return fmt.Sprintf("read-only for %v, then killed, checked (e2fsck) and started", hold), nil
}

// keepCheckLog appends one e2fsck run's output to path, dated; a failure
// to keep it is not the fault's.
func keepCheckLog(path string, out []byte) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "--- %s\n%s\n", time.Now().UTC().Format(time.RFC3339Nano), out)
}

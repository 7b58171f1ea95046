# Launcher: copy the mounted keys into a writable .ssh with the modes ssh insists on.
set -eu
cp /tmp/mpi-ssh-raw/* /root/.ssh/
chmod 600 /root/.ssh/id_rsa
chmod 644 /root/.ssh/id_rsa.pub /root/.ssh/authorized_keys

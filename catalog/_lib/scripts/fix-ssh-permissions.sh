set -x &&
cp /tmp/mpi-ssh-raw/* /root/.ssh/ &&
chmod 600 /root/.ssh/id_rsa &&
chmod 644 /root/.ssh/id_rsa.pub /root/.ssh/authorized_keys
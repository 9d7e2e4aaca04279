package io.sfclayer.testing;

import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.util.Progressable;

import java.io.IOException;

/** HDFS with {@link Faults} around the files writes create ({@code fs.hdfs.impl}). */
public class FaultHdfs extends DistributedFileSystem {
    @Override
    public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
                                     short replication, long blockSize, Progressable progress) throws IOException {
        return Faults.wrap(getConf(), f, super.create(f, permission, overwrite, bufferSize, replication, blockSize,
            progress), statistics);
    }
}

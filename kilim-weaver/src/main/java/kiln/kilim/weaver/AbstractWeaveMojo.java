package kiln.kilim.weaver;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.maven.plugin.AbstractMojo;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugin.MojoFailureException;
import org.apache.maven.plugins.annotations.Parameter;

/** Weaves one directory of class files against one classpath; the two goals differ in which. */
abstract class AbstractWeaveMojo extends AbstractMojo {
    /** Skip weaving (the classes then fail at run time: do not use for anything that runs fibers). */
    @Parameter(property = "kilim.weave.skip", defaultValue = "false")
    private boolean skip;

    abstract File classesDirectory();

    abstract List<String> classpathElements();

    @Override
    public void execute() throws MojoExecutionException, MojoFailureException {
        if (skip) {
            getLog().info("Kilim weaving skipped (kilim.weave.skip)");
            return;
        }
        Path classes = classesDirectory().toPath();
        List<Path> classpath = new ArrayList<>();
        for (String element : classpathElements()) classpath.add(Path.of(element));
        try {
            KilnWeaver.Report report = KilnWeaver.weave(classes, classpath);
            getLog().info("Kilim (kiln-kilim-weaver, ASM API level 9) wove " + report.woven.size() + " of " + report.scanned
                + " classes in " + classes + (report.stateClasses.isEmpty() ? "" : " (and wrote " + report.stateClasses.size() + " state classes)"));
            for (String c : report.woven) getLog().debug("woven: " + c);
            for (String r : report.restored) getLog().info("kept what Kilim's weaver drops: " + r);
        } catch (WeaveException e) {
            throw new MojoFailureException("\n" + e.getMessage());
        } catch (IOException e) {
            throw new MojoExecutionException("Kilim weaving " + classes + ": " + e, e);
        }
    }
}

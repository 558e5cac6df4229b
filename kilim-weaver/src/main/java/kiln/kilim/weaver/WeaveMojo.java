package kiln.kilim.weaver;

import java.io.File;
import java.util.List;

import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/**
 * Weaves the main classes ({@code target/classes}) in place, in {@code process-classes}: before
 * tests, jars and shading read them.
 */
@Mojo(name = "weave", defaultPhase = LifecyclePhase.PROCESS_CLASSES, requiresDependencyResolution = ResolutionScope.COMPILE,
    threadSafe = true)
public class WeaveMojo extends AbstractWeaveMojo {
    @Parameter(defaultValue = "${project.build.outputDirectory}", required = true)
    private File classesDirectory;

    @Parameter(defaultValue = "${project.compileClasspathElements}", readonly = true, required = true)
    private List<String> classpathElements;

    @Override
    File classesDirectory() {
        return classesDirectory;
    }

    @Override
    List<String> classpathElements() {
        return classpathElements;
    }
}

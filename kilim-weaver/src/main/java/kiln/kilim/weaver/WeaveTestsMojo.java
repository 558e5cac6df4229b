package kiln.kilim.weaver;

import java.io.File;
import java.util.List;

import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/** Weaves the test classes ({@code target/test-classes}) in place, in {@code process-test-classes}. */
@Mojo(name = "weave-tests", defaultPhase = LifecyclePhase.PROCESS_TEST_CLASSES, requiresDependencyResolution = ResolutionScope.TEST,
    threadSafe = true)
public class WeaveTestsMojo extends AbstractWeaveMojo {
    @Parameter(defaultValue = "${project.build.testOutputDirectory}", required = true)
    private File classesDirectory;

    @Parameter(defaultValue = "${project.testClasspathElements}", readonly = true, required = true)
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

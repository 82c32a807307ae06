import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

/**
 * SeckillJMeter starts Debian's JMeter 2.13 on a modern Java.
 *
 * <p>As shipped, JMeter 2.13 on Java 17 with Debian's XStream 1.4.20 cannot
 * load any plan: XStream's security allow-list rejects JMeter's own classes
 * (ScriptWrapper first), JMeter logs the error and still exits 0. This
 * launcher adds XStream's any-type permission to every XStream instance that
 * JMeter's SaveService holds (the plan reader and the results writer), then
 * hands over to JMeter's usual entry point, NewDriver.main, with the same
 * arguments. Plans are our own files, so trusting their types is fine here;
 * it is not a way to open untrusted plans.
 *
 * <p>Compile and run (tools/cmd/harness/loadrun/drivers.go does it):
 * <pre>
 *   javac -cp /usr/share/jmeter/bin/ApacheJMeter.jar -d OUT SeckillJMeter.java
 *   java -Djmeter.home=/usr/share/jmeter -cp OUT:/usr/share/jmeter/bin/ApacheJMeter.jar SeckillJMeter -n -t plan.jmx ...
 * </pre>
 */
public final class SeckillJMeter {
    private SeckillJMeter() {
    }

    public static void main(String[] args) throws Exception {
        Class<?> driver = Class.forName("org.apache.jmeter.NewDriver");
        // NewDriver's static initializer builds the class loader over lib/ and
        // lib/ext; JMeter's classes, SaveService among them, live there.
        Field loaderField = driver.getDeclaredField("loader");
        loaderField.setAccessible(true);
        ClassLoader loader = (ClassLoader) loaderField.get(null);
        Thread.currentThread().setContextClassLoader(loader);

        // SaveService reads bin/saveservice.properties while it initializes,
        // so JMeter's home and properties must be known first. JMeter.start
        // loads them again (with -J/-q overrides) before it reads them.
        String home = System.getProperty("jmeter.home", "/usr/share/jmeter");
        Class<?> utils = Class.forName("org.apache.jmeter.util.JMeterUtils", true, loader);
        utils.getMethod("setJMeterHome", String.class).invoke(null, home);
        utils.getMethod("loadJMeterProperties", String.class).invoke(null, home + "/bin/jmeter.properties");

        Class<?> xstream = Class.forName("com.thoughtworks.xstream.XStream", false, loader);
        Class<?> permission = Class.forName("com.thoughtworks.xstream.security.TypePermission", false, loader);
        Object anyType = Class.forName("com.thoughtworks.xstream.security.AnyTypePermission", true, loader)
                .getField("ANY").get(null);
        Method addPermission = xstream.getMethod("addPermission", permission);

        Class<?> saveService = Class.forName("org.apache.jmeter.save.SaveService", true, loader);
        int patched = 0;
        for (Field f : saveService.getDeclaredFields()) {
            if (Modifier.isStatic(f.getModifiers()) && xstream.isAssignableFrom(f.getType())) {
                f.setAccessible(true);
                Object saver = f.get(null);
                if (saver != null) {
                    addPermission.invoke(saver, anyType);
                    patched++;
                }
            }
        }
        if (patched == 0) {
            throw new IllegalStateException("SeckillJMeter: no XStream saver found in SaveService");
        }
        driver.getMethod("main", String[].class).invoke(null, (Object) args);
    }
}
